"""The notebook at 32k tokens: `transformer.notebook.decode(MODEL, TEXT, max_steps=3)` (the one greedy entry,
keep="auto": the attention store) on a held-back 32,000-token prompt (Multi30k lines past the 300 the test tokenizer
was trained on) with model T (a 2-layer Qwen2-style toy reading 131,072 positions, `bench/common/long_models.py`),
against Hugging Face's own `generate` of the same prompt (SDPA, greedy, 3 new tokens) as the baseline, each in a
fresh process (peak RSS by `resource.getrusage`). The tokens must be equal and the notebook's peak RSS at most
2.5 GB: the run exits 1 otherwise.

`PYTHONPATH=. .venv/bin/python -m bench.speed.notebook_long [--length 32000]`
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench.common.long_models import build_model, document, load_average

LONG = True  # two 32k-token passes in fresh processes: minutes on a busy 2-core machine
STEPS = 3
PEAK_MB = 2.5 * 1024


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _one_process(folder: str, text: str, what: str) -> dict:
    """In a fresh process: "notebook" (`notebook.decode`) or "generate" (Hugging Face's, SDPA), timed, with the
    chosen ids, the prompt's length and the peak RSS."""
    start = time.perf_counter()
    if what == "notebook":
        from transformer import notebook
        result = notebook.decode(folder, text, max_steps=STEPS)
        out = {"ids": [s.token_id for s in result.steps], "stored": result.trace.store is not None,
               "prompt": len(result.trace.decoder_input_tokens) - len(result.steps) + 1}
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer
        ids = AutoTokenizer.from_pretrained(folder)(text, return_tensors="pt").input_ids
        model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="sdpa", use_safetensors=True).eval()
        with torch.no_grad():
            got = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                                 max_new_tokens=STEPS)
        out = {"ids": got[0, ids.shape[1]:].tolist(), "prompt": ids.shape[1]}
    return {**out, "seconds": time.perf_counter() - start, "peak_mb": _peak_mb()}


def in_process(folder: str, text: str, what: str) -> dict:
    """`_one_process` in a spawned process of its own."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_one_process, (folder, text, what))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=32000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model("T", Path(tmp) / "T")
        text = document(folder, args.length + 200, skip=300)  # a little over: at least `length` tokens
        print(f"model T, held-back prompt of {len(text):,} characters; torch threads "
              f"{os.environ.get('OMP_NUM_THREADS', 'all')}, load {load_average()}", flush=True)
        got = {what: in_process(str(folder), text, what) for what in ("generate", "notebook")}
    for what, name in (("generate", "Hugging Face generate (baseline)"), ("notebook", "notebook.decode (store)")):
        r = got[what]
        print(f"{name:>34}: {r['prompt']:,} prompt tokens, {r['seconds']:6.1f} s, peak RSS {r['peak_mb']:7,.0f} MB, "
              f"ids {r['ids']}", flush=True)
    ok = (got["notebook"]["ids"] == got["generate"]["ids"] and got["notebook"]["stored"]
          and got["notebook"]["peak_mb"] <= PEAK_MB and got["notebook"]["prompt"] >= args.length)
    print(f"equal to generate, stored, >= {args.length:,} tokens, peak <= {PEAK_MB:,.0f} MB: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
