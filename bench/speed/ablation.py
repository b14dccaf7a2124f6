"""Head ablation and attribution on a 20-token input: the sweep of every head, Integrated Gradients for one step
(default points), gradient x input, and IG for every step (the agreement heatmap), each also as a ratio to one
greedy decode with the trace of the same input, measured in the same run.

`python -m bench.speed.ablation` (figures in bench/README.md); `--hf` only the Hugging Face model: a randomly
initialised Marian of opus-mt size (6+6 layers, 8 heads, d_model 512, 58,101-token output vocabulary) with a small
sentencepiece tokenizer trained on generated text (tests/helpers/hf_tiny_models.py), on a 20-token input.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch

from bench.common.shapes import opus_size_marian
from transformer.adapters import InspectableModel, adapter_for
from transformer.analysis import IG_STEPS, all_heads, attribute_step, attribute_steps, output_ids, sweep_heads
from transformer.data import TaskSpec, make_task
from transformer.decode import greedy_decode
from transformer.model import Seq2SeqTransformer, default_configs

TEXT = "thequickbrownfoxjump"  # 20 characters: 21 source tokens with </s>, 20 output steps
SIZES = {"2+2 layers, 4 heads, d_model 128": dict(d_model=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                                                  d_ff=512),
         "6+6 layers, 8 heads, d_model 512 (opus-mt size)": dict(d_model=512, n_heads=8, n_encoder_layers=6,
                                                                 n_decoder_layers=6, d_ff=2048)}


def median_time(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of `repeats` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[repeats // 2]


def measure(adapter: InspectableModel, text: str, repeats: int = 3, all_steps: bool = True) -> dict:
    """Seconds (and ratios to one greedy decode) of the sweep and the attributions for one model."""
    decode = lambda: greedy_decode(adapter, text, max_steps=20, stop_at_end=False)  # noqa: E731
    out = output_ids(decode())
    step = len(out) // 2
    figures = {
        "greedy_decode_s": median_time(decode, repeats),
        "sweep_s": median_time(lambda: sweep_heads(adapter, text, out), repeats),
        "ig_one_step_s": median_time(lambda: attribute_step(adapter, text, out, step), repeats),
        "grad_x_input_one_step_s": median_time(
            lambda: attribute_step(adapter, text, out, step, method="gradient_x_input"), repeats),
    }
    if all_steps:
        figures["ig_all_steps_s"] = median_time(lambda: attribute_steps(adapter, text, out), max(1, repeats - 2))
    base = figures["greedy_decode_s"]
    return {"heads_swept": len(all_heads(adapter)), "source_tokens": len(adapter.tokenize_source(text).ids),
            "output_steps": len(out), "ig_points": IG_STEPS,
            **{k: round(v, 4) for k, v in figures.items()},
            **{k[:-2] + "_x_decode": round(v / base, 1) for k, v in figures.items() if k != "greedy_decode_s"}}


def run_size(overrides: dict, repeats: int = 3, all_steps: bool = True) -> dict:
    """`measure` on one of our models of the given size (random weights)."""
    task = make_task(TaskSpec(name="reverse", n_train=10, n_valid=2))
    cfg, _ = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                             model_overrides=dict(max_len=64, **overrides))
    torch.manual_seed(0)
    model = Seq2SeqTransformer(cfg).eval()
    return measure(adapter_for(model, task.src_tokenizer, task.tgt_tokenizer), TEXT, repeats, all_steps)


HF_TEXT = "the big dog sees a red house near the small tree and the green bird eats"  # 20 source pieces with </s>


def run_hf(repeats: int = 1) -> dict:
    """`measure` on the opus-mt-size random Marian (one repeat: minutes on 2 busy cores)."""
    with tempfile.TemporaryDirectory() as tmp:
        return measure(opus_size_marian(Path(tmp) / "marian"), HF_TEXT, repeats, all_steps=False)


def run(repeats: int = 3) -> dict:
    """The small model with every figure; the opus-mt-size one once, without IG over every step (minutes)."""
    return {name: run_size(overrides, repeats, all_steps=True) if i == 0 else run_size(overrides, 1, all_steps=False)
            for i, (name, overrides) in enumerate(SIZES.items())}


if __name__ == "__main__":
    torch.set_num_threads(2)
    if "--hf" in sys.argv:
        print(f"6+6 layers, 8 heads, d_model 512, Hugging Face Marian (opus-mt size): {json.dumps(run_hf())}")
        sys.exit(0)
    for i, (name, overrides) in enumerate(SIZES.items()):
        figures = run_size(overrides, 3) if i == 0 else run_size(overrides, 1, all_steps=False)
        print(f"{name}: {json.dumps(figures)}", flush=True)
