"""The retrieval detector on the shipped recall model (docs/finding-heads.md; target ≤ 60 s for 4 depths × 2
lengths at 2k and at 8k tokens): `retrieval_scores(adapter, N)` at N = 2,048 (inputs of 1,024 and 2,048 tokens) and
N = 8,192 (4,096 and 8,192), four depths each, against the baseline of the same inputs' plain forwards (no weights
kept) in the same run; and whether the card's recall head ranks first at each length (`--lengths 512 1024` where
the shipped model still copies).

Long inputs (`--long 32768`, each in a fresh process so that its peak RSS, `resource.getrusage`, is its own): the
detector reads only the copy region's rows through the attention store (`analysis.causal_rows`); the seconds and
peak RSS, against the model loaded alone and, with `--maps`, the full-map path (every layer's T x T map; 2 layers x
32k^2 floats: 8.6 GB for the maps alone) in its own process. `--compare 8192` does both paths at that length.

`PYTHONPATH=. .venv/bin/python -m bench.speed.retrieval [--lengths 2048 8192] [--repeats 1] [--long 32768]
[--compare 8192] [--maps]`
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import time

import torch

from transformer.analysis.heads.long_range import DEPTHS, NEEDLE, retrieval_scores
from transformer.analysis.source.causal_rows import STORE_ABOVE
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


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _one_process(model: str, length: int, store_above: int | None) -> dict:
    """In a fresh process: the model's RSS once loaded, then the detector's seconds, peak RSS and best head
    (`store_above` None: the model loaded, nothing run)."""
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads())))
    adapter = open_model(model)
    out: dict = {"loaded_mb": _peak_mb()}
    if store_above is None:
        return out
    start = time.perf_counter()
    scores, info = retrieval_scores(adapter, length, store_above=store_above)
    out.update(seconds=time.perf_counter() - start, peak_mb=_peak_mb(), copy_rate=info["copy_rate"],
               lengths=info["lengths"], best=float(scores.max()))
    return out


def in_process(model: str, length: int, store_above: int | None) -> dict:
    """`_one_process` in a spawned process of its own (its peak RSS is its own)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_one_process, (model, length, store_above))


def long_lines(model: str, lengths: list[int], compare: list[int], maps: bool) -> None:
    """The detector at long lengths through the store (and the full maps where asked), each in its own process."""
    loaded = in_process(model, 0, None)["loaded_mb"]
    print(f"model loaded alone: peak RSS {loaded:,.0f} MB")
    for length in sorted({*lengths, *compare}):
        paths = [("store", 0)] + ([("maps", 10**9)] if maps or length in compare else [])
        for name, store_above in paths:
            got = in_process(model, length, store_above)
            print(f"N {length:>6,} ({'/'.join(f'{n:,}' for n in got['lengths'])} tokens x {len(DEPTHS)} depths) "
                  f"{name:>5}: {got['seconds']:6.1f} s, peak RSS {got['peak_mb']:7,.0f} MB "
                  f"(+{got['peak_mb'] - loaded:,.0f} MB over the model loaded); copy rate {got['copy_rate']:.2f}, "
                  f"best score {got['best']:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--long", type=int, nargs="*", default=[32768], help="lengths through the store, own process")
    parser.add_argument("--compare", type=int, nargs="*", default=[8192], help="lengths: the store and the full maps")
    parser.add_argument("--maps", action="store_true", help="the full-map path at the --long lengths too")
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
    print(f"all lengths: detector {total:.1f} s (target ≤ 60 s) vs plain forwards {base_total:.1f} s; inputs above "
          f"{STORE_ABOVE:,} tokens read through the store")
    long_lines(args.model, args.long, args.compare, args.maps)


if __name__ == "__main__":
    main()
