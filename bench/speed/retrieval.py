"""The retrieval detector on the shipped recall model (docs/finding-heads.md; target ≤ 60 s for 4 depths × 2
lengths at 2k and at 8k tokens): `retrieval_scores(adapter, N)` at N = 2,048 (inputs of 1,024 and 2,048 tokens) and
N = 8,192 (4,096 and 8,192), four depths each, against the baseline of the same inputs' plain forwards (no weights
kept) in the same run; and whether the card's recall head ranks first at each length (`--lengths 512 1024` where
the shipped model still copies).

`PYTHONPATH=. .venv/bin/python -m bench.speed.retrieval [--lengths 2048 8192] [--repeats 1]`
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from transformer.analysis.long_range import DEPTHS, NEEDLE, retrieval_scores
from transformer.data import END_ID, START_ID
from transformer.model import Head
from transformer.store import load_checkpoint, open_model

MODEL = "checkpoints/recall"


def plain_forwards(adapter, length: int) -> None:
    """The detector's forwards (lengths N / 2 and N, one per depth) without keeping any weights: the baseline."""
    network, gen = adapter.network, torch.Generator().manual_seed(0)
    for n in (length // 2, length):
        for _ in DEPTHS:
            ids = torch.randint(4, adapter.vocab_size, (1, n - 1), generator=gen)
            with torch.no_grad():
                network.full(torch.tensor([[END_ID]]), torch.cat([torch.tensor([[START_ID]]), ids], 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--model", default=MODEL)
    args = parser.parse_args()
    adapter = open_model(args.model)
    named = [label for label, role in load_checkpoint(args.model, load_optimizer=False, load_frames=False)
             .known_heads.items() if role == "retrieval"]
    print(f"{args.model}: recall head {named}, {len(DEPTHS)} depths, needle {NEEDLE}; torch threads "
          f"{torch.get_num_threads()}, load {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    total = base_total = 0.0
    for length in args.lengths:
        times, base = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            scores, info = retrieval_scores(adapter, length)
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
            plain_forwards(adapter, length)
            base.append(time.perf_counter() - start)
        layer, head = divmod(int(scores.argmax()), scores.shape[1])
        best = Head(adapter.family.decoder_kind, layer, head).label
        t, b = statistics.median(times), statistics.median(base)
        total, base_total = total + t, base_total + b
        found = (f"best {best} {float(scores.max()):.2f} (next {float(scores.flatten().topk(2).values[1]):.2f})"
                 f"{'' if best in named else '  NOT the recall head'}") if float(scores.max()) > 0 else \
            "no copy event: no head ranks first"
        print(f"N {length:>6,}: detector {t:6.1f} s vs plain forwards {b:5.1f} s ({t / b:.1f}x); copy rate "
              f"{info['copy_rate']:.2f}; {found}")
    print(f"all lengths: detector {total:.1f} s (target ≤ 60 s) vs plain forwards {base_total:.1f} s")


if __name__ == "__main__":
    main()
