"""The line view in Chromium (the target: 12 heads, 60 tokens, ≤ 1 s): a random trace of 12 heads over
60 source and 60 target tokens (scores × 3 before the softmax, so rows are peaked as real heads are), the line view
of every head (lines under 0.02 left out, at most 6,000), against one head's weight map drawn in the same page.
Time = JSON.parse + vegaEmbed + the view's run + two animation frames (bench/app/grid_render.py's DRAW_JS), median of
`--repeats`; the Python time to build each spec beside it.

`PYTHONPATH=. .venv/bin/python -m bench.app.line_view [--repeats 3]`
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import vl_convert as vlc
from playwright.sync_api import sync_playwright

from bench.app.grid_render import DRAW_JS
from studio_browser import launch_chromium
from transformer.charts import attention_heatmap, line_frame, line_view
from transformer.decode import AttentionTrace

HEADS, TOKENS, KIND = 12, 60, "cross"


def trace(seed: int = 0) -> AttentionTrace:
    g = torch.Generator().manual_seed(seed)
    src = [f"▁w{i}" for i in range(TOKENS - 1)] + ["</s>"]
    tgt = ["</s>"] + [f"▁v{i}" for i in range(TOKENS - 1)]

    def weights(causal: bool = False) -> torch.Tensor:
        scores = 3 * torch.randn(1, HEADS, TOKENS, TOKENS, generator=g)
        if causal:
            scores = scores.masked_fill(torch.ones(TOKENS, TOKENS, dtype=torch.bool).triu(1), float("-inf"))
        return torch.softmax(scores, -1)

    return AttentionTrace(tuple(src), tuple(tgt), weights(), weights(True), weights())


def run(repeats: int) -> dict:
    t = trace()
    built = {}
    start = time.perf_counter()
    lines = line_view(t, KIND, 0, range(HEADS)).to_dict(validate=False)
    built["lines"] = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    heatmap = attention_heatmap(t, KIND, 0, 0).to_dict(validate=False)
    built["map"] = (time.perf_counter() - start) * 1000
    n_lines = len(line_frame(t, KIND, 0, range(HEADS)))
    html = f"<!doctype html><html><body><script>{vlc.javascript_bundle()}</script></body></html>"
    out = {"heads": HEADS, "tokens": TOKENS, "lines": n_lines}
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_content(html)
        page.wait_for_function("() => typeof vegaEmbed === 'function'")
        for name, spec in (("map", heatmap), ("lines", lines)):
            text = json.dumps(spec)
            for renderer in ("svg", "canvas"):
                page.evaluate(DRAW_JS, [text, renderer])  # warm-up
                ms = statistics.median(page.evaluate(DRAW_JS, [text, renderer])[0] for _ in range(repeats))
                out[f"{name}_{renderer}_ms"] = round(ms, 1)
            out[f"{name}_build_ms"] = round(built[name], 1)
        browser.close()
    out["lines_vs_map_canvas"] = round(out["lines_canvas_ms"] / out["map_canvas_ms"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps({"load": os.getloadavg()[0], **run(args.repeats)}))


if __name__ == "__main__":
    main()
