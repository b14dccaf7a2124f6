"""Source or prefix at real sizes: reliance for a 20-step decode (a teacher-forced capture of the decode's insides,
then each step's shares, distances and flags) against the 20-step greedy decode itself (the baseline, measured in
the same run, interleaved). Target: reliance <= 1.5x the decode.

Parts: `opus` (a random Marian of opus-mt-en-de's shape), `bart` (a random BART of bart-large's shape); a 20-word
input each. `python -m bench.speed.reliance [part ...]`; one JSON line per part. Figures: bench/README.md, "Source or
prefix".
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

from bench.speed.lens import bart, opus  # noqa: E402
from transformer.analysis import reliance  # noqa: E402
from transformer.decode import greedy_decode  # noqa: E402

REPEATS = 5
STEPS = 20
TEXT = "the big dog sees a red house near the small tree and the green bird eats a fish under the blue sky"
PARTS = {"opus": opus, "bart": bart}


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def measure(part: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        adapter = PARTS[part](Path(tmp) / part)
        run = dict(max_steps=STEPS, stop_at_end=False)
        result = greedy_decode(adapter, TEXT, **run)  # warm up both
        reliance(adapter, result)
        decode, found = [], []
        for _ in range(REPEATS):  # interleaved, so both see the same machine
            result, seconds = _timed(lambda: greedy_decode(adapter, TEXT, **run))
            decode.append(seconds)
            found.append(_timed(lambda result=result: reliance(adapter, result))[1])
        return {"part": part, "model": adapter.name, "words": len(TEXT.split()), "steps": len(result.steps),
                "decode_s": round(min(decode), 3), "reliance_s": round(min(found), 3),
                "ratio": round(min(found) / min(decode), 3), "median_ratio": round(
                    sorted(f / d for f, d in zip(found, decode, strict=True))[REPEATS // 2], 3)}


def main(argv: list[str]) -> None:
    torch.set_num_threads(2)
    for part in argv or list(PARTS):
        print(json.dumps(measure(part)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
