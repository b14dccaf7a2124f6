"""Exports of the shipped Multi30k model's 20-token decode: the offline replay page (size, build time) and slides
(SVG / PNG / PDF at 1920x1080) of its figures, each also as a ratio to the same chart's plain `chart_to_svg`
(the app's own export), measured in the same run.

`python -m bench.speed.export` (needs checkpoints/multi30k-en-de).
"""
from __future__ import annotations

import json
import time
from typing import Callable

import torch

from transformer.charts import (
    attention_grid,
    attention_heatmap,
    chart_to_svg,
    replay_html,
    slide_pdf,
    slide_png,
    slide_svg,
    source_strip,
    topk_bars,
)
from transformer.decode import greedy_decode
from transformer.store import open_model

TEXT = ("A man in a blue shirt and a woman in a red dress are riding their bikes down a busy street next to a large "
        "old building.")


def median_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """Median wall time of `repeats` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def run() -> dict:
    adapter = open_model("checkpoints/multi30k-en-de")
    result = greedy_decode(adapter, TEXT, max_steps=20)
    trace, t = result.trace, 5
    page = replay_html(result, adapter.name, "Weights of step 6,684 (last)")
    decode_s = median_time(lambda: greedy_decode(adapter, TEXT, max_steps=20))
    replay_s = median_time(lambda: replay_html(result, adapter.name, "Weights of step 6,684 (last)"))
    out = {"steps": len(result.steps), "source_tokens": len(trace.source_tokens),
           "replay_bytes": len(page.encode("utf-8")), "replay_s": round(replay_s, 3),
           "replay_vs_decode": round(replay_s / decode_s, 2), "slides": {}}
    title = [f"{adapter.name} · weights of step 6,684", f"“{TEXT}” · step {t + 1} of {len(result.steps)}"]
    figures = {"heatmap (cross, step)": attention_heatmap(trace, "cross", 0, None, max_row=t, highlight_row=t),
               "grid (cross, 2 layers x 4 heads + mean)": attention_grid(trace, "cross"),
               "source strip": source_strip(trace.source_tokens, trace.matrix("cross", 0)[t].tolist(), max_width=1000),
               "top-k": topk_bars(result.steps[t].top_k, result.steps[t].token)}
    for name, chart in figures.items():
        svg_s = median_time(lambda chart=chart: chart_to_svg(chart))
        times = {kind: median_time(lambda fn=fn, chart=chart: fn(chart, title)) for kind, fn in
                 (("svg", slide_svg), ("png", slide_png), ("pdf", slide_pdf))}
        out["slides"][name] = {**{f"{k}_s": round(v, 3) for k, v in times.items()},
                               "svg_vs_chart_to_svg": round(times["svg"] / svg_s, 2)}
    return out


if __name__ == "__main__":
    torch.set_num_threads(2)
    print(json.dumps(run(), indent=1))
