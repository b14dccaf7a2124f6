"""Head sweeps at real sizes: the exact ablation of every head (batched, fp32 and bf16) and the one-pass estimate,
with the one-head-at-a-time baseline measured on a sample of heads in the same run, and how well the estimate
ranks heads (Spearman vs exact). Each part runs in its own process so its peak RSS is its own.

Parts: `bart` (a random BART of bart-large's shape: 12+12 layers, 16 heads, d_model 1024, 50,265-token vocabulary;
576 heads, 20 output tokens), `opus` (a random Marian of opus-mt's shape: the CLI `heads` report, sweep + agreement
with gradient x input, then with Integrated Gradients), `multi30k` (the shipped model: estimate vs exact).
`python -m bench.speed.sweep` runs all three.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common.shapes import bart_large_shape, opus_size_marian  # noqa: E402
from transformer.analysis import (  # noqa: E402
    all_heads,
    estimate_agreement,
    estimate_head_effects,
    head_mask,
    head_report,
    output_ids,
    sweep_heads,
)
from transformer.analysis.patching.ablation import output_log_prob, teacher_inputs  # noqa: E402
from transformer.decode import greedy_decode  # noqa: E402

BASELINE_SAMPLE = 12  # heads ablated one at a time to estimate the old sweep's time
TEXT = "the big dog sees a red house near the small tree and the green bird eats"


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def sweep_figures(adapter, text: str, out: list[int], bf16: bool = True) -> dict:
    """Exact sweep (fp32, bf16), the estimate, the baseline per head, Spearman of estimate vs exact."""
    src, tgt_in = teacher_inputs(adapter, text, out)
    targets = torch.tensor(out)
    heads = all_heads(adapter)
    sample = heads[:: max(1, len(heads) // BASELINE_SAMPLE)][:BASELINE_SAMPLE]
    _, one = timed(lambda: [output_log_prob(adapter, src, tgt_in, targets, head_mask(adapter, [h])) for h in sample])
    sweep, exact_s = timed(lambda: sweep_heads(adapter, text, out))
    estimate, estimate_s = timed(lambda: estimate_head_effects(adapter, text, out))
    figures = {"heads": len(heads), "output_tokens": len(out), "source_tokens": len(src[0]),
               "baseline_one_at_a_time_s": round(one / len(sample) * len(heads), 1),
               "exact_fp32_s": round(exact_s, 2), "estimate_s": round(estimate_s, 2),
               "spearman_estimate_vs_exact": round(estimate_agreement(estimate, sweep.frame), 3)}
    if bf16:
        fast, bf16_s = timed(lambda: sweep_heads(adapter, text, out, dtype=torch.bfloat16))
        both = sweep.frame.merge(fast.frame, on="label", suffixes=("", "_bf16"))
        figures |= {"exact_bf16_s": round(bf16_s, 2),
                    "bf16_max_abs_error": round(float((both["drop"] - both["drop_bf16"]).abs().max()), 4)}
    figures["speedup_fp32"] = round(figures["baseline_one_at_a_time_s"] / exact_s, 1)
    return figures


def part_bart() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        adapter = bart_large_shape(Path(tmp) / "bart")
        g = torch.Generator().manual_seed(0)
        out = torch.randint(4, len(adapter.tokenizer), (20,), generator=g).tolist()  # 20 output tokens, teacher-forced
        return sweep_figures(adapter, TEXT, out) | {"peak_rss_gb": round(peak_rss_gb(), 2)}


def part_opus() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        adapter = opus_size_marian(Path(tmp) / "marian")
        loaded = peak_rss_gb()
        # the `heads` report (sweep + agreement) with each attribution method; a random model never stops
        fast, fast_s = timed(lambda: head_report(adapter, TEXT, max_steps=20, method="gradient_x_input"))
        fast_rss = peak_rss_gb()
        report, report_s = timed(lambda: head_report(adapter, TEXT, max_steps=20))
        rss = peak_rss_gb()
        out = output_ids(report.result)
        figures = sweep_figures(adapter, TEXT, out, bf16=False)
    return {"heads_report_gradient_x_input_s": round(fast_s, 2), "peak_rss_gradient_x_input_gb": round(fast_rss, 2),
            "heads_report_ig_s": round(report_s, 2), "heads_report_ig_points": 32,
            "rss_after_load_gb": round(loaded, 2), "peak_rss_gb": round(rss, 2), **figures}


def part_multi30k() -> dict:
    from transformer.store import open_model
    adapter = open_model(str(ROOT / "checkpoints" / "multi30k-en-de"))
    text = "Two young children in blue shirts are playing soccer on a green field."
    out = output_ids(greedy_decode(adapter, text))
    return sweep_figures(adapter, text, out, bf16=False)


PARTS = {"opus": part_opus, "multi30k": part_multi30k, "bart": part_bart}

if __name__ == "__main__":
    torch.set_num_threads(2)
    if len(sys.argv) > 1 and sys.argv[1] in PARTS:
        print(json.dumps(PARTS[sys.argv[1]]()))
        sys.exit(0)
    for name in PARTS:
        done = subprocess.run([sys.executable, "-m", "bench.speed.sweep", name], cwd=ROOT, capture_output=True,
                              text=True)
        print(f"{name}: {done.stdout.strip() or done.stderr.strip()[-2000:]}", flush=True)
