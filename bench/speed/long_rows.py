"""A document's one-row views against its stored decode, in the same run (T: the 2-layer, 4-head, d_model-64
Qwen2-style toy with a 131,072-token context, built from its config; a random prompt with a line break every 41
tokens): the stored decode keeping the lens's residuals (the baseline), Inside one head for the last row, the lens
at the 3 steps, the row summed over its lines, and the patching estimate at a step (an edit in the middle), each in
CPU seconds and as a ratio to the decode.

    OMP_NUM_THREADS=1 python -m bench.speed.long_rows                 # 8,192 and 32,768 tokens
    OMP_NUM_THREADS=1 python -m bench.speed.long_rows --lengths 8192
"""
from __future__ import annotations

import argparse
import resource
import time
from typing import Any, Callable

import torch

from bench.speed.attention_store import toy_t

LONG = True  # the 32k decode and the estimate's two prefills take half a minute of CPU
STEPS = 3


def _cpu(run: Callable[[], Any]) -> tuple[Any, float]:
    start = time.process_time()
    out = run()
    return out, time.process_time() - start


def measure(adapter: Any, n: int) -> dict[str, float]:
    """CPU seconds of each view at `n` prompt tokens."""
    from transformer.adapters import SourceText
    from transformer.analysis import StepRuns, estimate_patching, every_step_lens, head_row, lens_grid
    from transformer.decode import greedy_decode, group_sums, segment_groups
    prompt = torch.randint(3, 299, (n,), generator=torch.Generator().manual_seed(0)).tolist()  # the tokenizer's ids
    newline = adapter.token_to_id("Ċ")
    for i in range(40, n, 41):
        prompt[i] = newline
    source = SourceText(tuple(prompt), tuple(adapter.ids_to_tokens(prompt)))
    result, decode_s = _cpu(lambda: greedy_decode(adapter, source, max_steps=STEPS, residuals=True, keep="store"))
    store = result.trace.store
    row, row_s = _cpu(lambda: head_row(store, "self", 1, 2, store.layer("self", 1).n_rows - 1))
    _, lens_s = _cpu(lambda: lens_grid(every_step_lens(adapter, result)))
    labels = list(result.trace.decoder_input_tokens)
    _, group_s = _cpu(lambda: group_sums(row.weights, segment_groups(labels, "line")))
    edited = list(prompt)
    edited[n // 2] = (edited[n // 2] + 1) % 290 + 3
    fed = [result.steps[0].token_id]
    runs = StepRuns((*prompt, *fed), (*edited, *fed), result.steps[1].token_id)
    _, patch_s = _cpu(lambda: estimate_patching(adapter, runs))
    return {"decode": decode_s, "row": row_s, "lens": lens_s, "lines": group_s, "patching": patch_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="*", default=[8192, 32768])
    args = parser.parse_args()
    adapter = toy_t()
    for n in args.lengths:
        t = measure(adapter, n)
        base = t["decode"]
        print(f"T, {n:,} tokens + {STEPS} steps: stored decode with the lens's residuals {base:.2f} CPU-s; "
              + ", ".join(f"{name} {t[name]:.4f} CPU-s ({t[name] / base:.3f}x)" for name in
                          ("row", "lens", "lines", "patching"))
              + f"; peak resident set {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
