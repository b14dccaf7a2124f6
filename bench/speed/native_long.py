"""Our decoder-only model at its own context: the notebook's decode (`transformer.notebook.decode(MODEL, TEXT,
max_steps=3)`, the one greedy entry with keep="auto": the prompt fed through the store's fused forward, then 3 steps)
of a 32,000-token prompt (random letters, one token each) on the shipped recall model (`checkpoints/recall`: a local
layer with a window and a global one; docs/long-inputs.md), against the baseline of one plain forward of the same
prompt (no store, no weights), each in a fresh process so that its peak RSS (`resource.getrusage`) is its own, less
the model loaded alone.

`PYTHONPATH=. .venv/bin/python -m bench.speed.native_long [--length 32000] [--model checkpoints/recall]`
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import time

import torch

from transformer import notebook
from transformer.store import open_model

MODEL = "checkpoints/recall"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def prompt_text(length: int, seed: int = 0) -> str:
    """`length` random letters: as many tokens for the recall model's character tokenizer."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    picks = torch.randint(0, len(letters), (length,), generator=torch.Generator().manual_seed(seed)).tolist()
    return "".join(letters[i] for i in picks)


def _one_process(model: str, length: int, what: str) -> dict:
    """In a fresh process: the model's RSS once loaded, then `what` ("store": the stored decode; "plain": one plain
    forward; "": nothing) timed, with the peak RSS."""
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads())))
    adapter = open_model(model)
    out: dict = {"loaded_mb": _peak_mb()}
    text = prompt_text(length)
    source = adapter.tokenize_source(text)
    prompt = adapter.decoder_prefix(source)
    start = time.perf_counter()
    if what == "store":
        result = notebook.decode(adapter, text, max_steps=3)
        out.update(steps=len(result.steps), stored=result.trace.store is not None, tokens=len(prompt))
    elif what == "plain":
        with torch.no_grad():
            adapter.network.full(torch.tensor([list(source.ids)]), torch.tensor([prompt[len(source.ids):]]))
    out.update(seconds=time.perf_counter() - start, peak_mb=_peak_mb())
    return out


def in_process(model: str, length: int, what: str) -> dict:
    """`_one_process` in a spawned process of its own."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_one_process, (model, length, what))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=32000)
    parser.add_argument("--model", default=MODEL)
    args = parser.parse_args()
    loaded = in_process(args.model, 16, "")["loaded_mb"]
    print(f"{args.model}, {args.length:,}-token prompt; torch threads {os.environ.get('OMP_NUM_THREADS', 'all')}, "
          f"load {' / '.join(f'{x:.1f}' for x in os.getloadavg())}; model loaded alone: peak RSS {loaded:,.0f} MB")
    for what, name in (("plain", "one plain forward (baseline)"), ("store", "notebook.decode, 3 steps (store)")):
        got = in_process(args.model, args.length, what)
        print(f"{name:>32}: {got['seconds']:6.1f} s, peak RSS {got['peak_mb']:7,.0f} MB "
              f"(+{got['peak_mb'] - loaded:,.0f} MB over the model loaded)", flush=True)


if __name__ == "__main__":
    main()
