"""Eight different decodes at once on one model: batched by the server's queue vs taking turns vs one alone.

A random BART of bart-large's shape (`bench.common.shapes.bart_large_shape`: 12 + 12 layers, 16 heads, d_model
1024, 50,265 output ids), its end token made to lose so every decode runs its 20 steps; eight different sentences
of 20 words (Multi30k's validation captions when the corpus is there, else generated ones). Each round, in this
order: one decode alone, the eight asked by eight threads at the same moment through a `DecodeQueue` (as eight
sessions' script threads ask), another decode alone (the baseline is the mean of the two around the batch), and in
the first round the eight one after another (what eight sessions got before: the model's lock made them take
turns). Times are wall-clock from the first ask to the last result.

    PYTHONPATH=. .venv/bin/python -m bench.speed.decode_batching [--rounds 3] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

import torch

from bench.common.shapes import bart_large_shape
from tests.helpers.hf_tiny_models import WORDS
from transformer.decode import DecodeQueue, greedy_decode

LONG = True  # eight bart-large-shaped decodes, rounds of them: run it on a quiet machine

ROOT = Path(__file__).resolve().parents[2]
N = 8
STEPS = 20


def twenty_word_texts(n: int = N) -> list[str]:
    """`n` different sentences of 20 words from the tokenizer's own corpus words (~23 tokens each, as a 20-word
    caption is with bart-large's own tokenizer; a Multi30k caption through this small test tokenizer would be ~80)."""
    rng = random.Random(0)
    return [" ".join(rng.choice(WORDS) for _ in range(20)) for _ in range(n)]


def at_once(queue: DecodeQueue, adapter, texts: list[str]) -> tuple[float, dict[int, tuple[str, ...]]]:
    """Seconds from eight threads asking at once to the last result, and each thread's output tokens."""
    barrier = threading.Barrier(len(texts) + 1)
    done: list[float] = []
    tokens: dict[int, tuple[str, ...]] = {}

    def ask(i: int) -> None:
        barrier.wait()
        tokens[i] = queue.greedy(adapter, texts[i], max_steps=STEPS).output_tokens
        done.append(time.perf_counter())

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return max(done) - start, tokens


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = twenty_word_texts()
    with tempfile.TemporaryDirectory() as tmp:
        adapter = bart_large_shape(Path(tmp) / "bart")
        with torch.no_grad():
            adapter.model.final_logits_bias[0, adapter.model.config.eos_token_id] = -10.0  # every decode runs 20 steps
        greedy_decode(adapter, texts[-1], max_steps=STEPS)  # warm-up
        queue = DecodeQueue()
        rows, batched_tokens, alone_tokens = [], [], {}

        def in_turns() -> None:
            for i, t in enumerate(texts):
                alone_tokens[i] = greedy_decode(adapter, t, max_steps=STEPS).output_tokens

        for r in range(args.rounds):
            before = timed(lambda r=r: greedy_decode(adapter, texts[r % N], max_steps=STEPS))
            sizes = len(queue.batch_sizes)
            batched, tokens = at_once(queue, adapter, texts)
            after = timed(lambda r=r: greedy_decode(adapter, texts[(r + 1) % N], max_steps=STEPS))
            turns = timed(in_turns) if r == 0 else None  # 8 decodes: once is enough for its ratio
            batched_tokens.append(tokens)
            one = (before + after) / 2
            rows.append({"one_s": round(one, 2), "batched_s": round(batched, 2), "batches": queue.batch_sizes[sizes:],
                         "batched_over_one": round(batched / one, 2),
                         **({"turns_s": round(turns, 2), "turns_over_one": round(turns / one, 2)} if turns else {}),
                         "load": round(os.getloadavg()[0], 1)})
            print(json.dumps(rows[-1]), flush=True)
    print(json.dumps({"source_tokens": [len(adapter.tokenize_source(t).ids) for t in texts], "output_tokens": STEPS,
                      "median_batched_over_one": statistics.median(r["batched_over_one"] for r in rows),
                      "same_tokens_as_alone": all(t == alone_tokens for t in batched_tokens)}))


if __name__ == "__main__":
    main()
