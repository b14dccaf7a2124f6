"""Inside one head at real sizes. For each part: a 20-step greedy decode (the baseline),
the first capture of every layer's queries, keys, values and output projection over that decode (ratio to the
decode, measured in the same run), a new head's computation with its stage charts built (what the server does when
a head is picked, after the first capture), and the contribution map of a head and of the mean of heads with its
chart, against the weight map's chart (ratio in the same run). Best of `REPEATS`.

Parts: `bart` (a random BART of bart-large's shape, 20-word input), `opus` (a random Marian of opus-mt-en-de's shape,
a ~500-token input), `gpt2` (a random GPT-2 of gpt2's shape, 20-word prompt). `python -m bench.speed.head_computation
[part ...]`; one JSON line per part. Figures: bench/README.md, "Inside one head".
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.speed.lens import bart, gpt2, opus  # noqa: E402
from transformer.analysis import capture_decode, computation_at, contributions  # noqa: E402
from transformer.charts import attention_heatmap, contribution_heatmap, stage_charts  # noqa: E402
from transformer.decode import greedy_decode  # noqa: E402

REPEATS = 3
STEPS = 20
TEXT = "the big dog sees a red house near the small tree and the green bird eats a fish under the blue sky"
PARTS = {"bart": bart, "opus": opus, "gpt2": gpt2}


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def _best(fn) -> float:
    return min(_timed(fn)[1] for _ in range(REPEATS))


def _long_text(adapter, n_tokens: int) -> str:
    """Words of TEXT repeated until the source has about `n_tokens` tokens (under the model's limit)."""
    words = TEXT.split()
    out: list[str] = []
    while len(adapter.tokenize_source(" ".join(out)).ids) < min(n_tokens, adapter.max_source_len - 8):
        out.append(words[len(out) % len(words)])
    return " ".join(out)


def measure(part: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        adapter = PARTS[part](Path(tmp) / part)
        text = _long_text(adapter, 500) if part == "opus" else TEXT
        run = dict(max_steps=STEPS, stop_at_end=False)
        result = greedy_decode(adapter, text, **run)  # warm up
        decode, capture = [], []
        for _ in range(REPEATS):  # interleaved, so both see the same machine
            decode.append(_timed(lambda: greedy_decode(adapter, text, **run))[1])
            captured, seconds = _timed(lambda: capture_decode(adapter, result))
            capture.append(seconds)
        kind = adapter.family.cross_kind or adapter.family.decoder_kind
        n_layers, n_heads = adapter.head_counts()[kind]
        row = result.trace.axis_sizes(kind)[0] - 1
        keys = captured.tokens(kind)[1]
        picks = iter([(layer, head) for layer in range(n_layers) for head in range(n_heads)][::7] * REPEATS)

        def new_head():
            layer, head = next(picks)
            computation = computation_at(adapter, captured, kind, layer, head, row)
            return {n: c.to_dict(validate=False) for n, c in stage_charts(computation, keys).items()}

        head_s = _best(new_head)
        q_tokens, k_tokens = result.trace.labels(kind)
        window = (0, min(len(k_tokens), 60))
        weight_s = _best(lambda: attention_heatmap(result.trace, kind, n_layers - 1, 0, max_width=1100)
                         .to_dict(validate=False))
        contribution_s = _best(lambda: contribution_heatmap(
            contributions(adapter, captured, kind, n_layers - 1, 0)[captured.first:], q_tokens, k_tokens, "c",
            window).to_dict(validate=False))
        mean_s = _best(lambda: contributions(adapter, captured, kind, n_layers - 1, None))
        return {"part": part, "model": adapter.name, "source_tokens": len(result.trace.source_tokens),
                "steps": len(result.steps), "decode_s": round(min(decode), 3), "capture_s": round(min(capture), 3),
                "capture_ratio": round(min(capture) / min(decode), 3), "new_head_s": round(head_s, 3),
                "weight_map_s": round(weight_s, 3), "contribution_map_s": round(contribution_s, 3),
                "contribution_ratio": round(contribution_s / weight_s, 3), "mean_contribution_s": round(mean_s, 3),
                "capture_mb": round(captured.nbytes() / 2**20, 1)}


def main(argv: list[str]) -> None:
    torch.set_num_threads(2)
    for part in argv or list(PARTS):
        print(json.dumps(measure(part)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
