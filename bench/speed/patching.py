"""Activation patching and edit-and-compare at real shapes, each part in its own process so its
peak RSS is its own, with baselines measured in the same run.

Parts: `bart` (a random BART of bart-large's shape, 576 heads: every head's output patched at one step, exact and
the one-pass estimate, against patching a sample of heads one run at a time (batch 1); peak RSS against the
weights), `opus` (a random Marian of opus-mt's shape, 20-word inputs: the encoder output patched at every source
position, against batch 1; edit and compare of a 20-word input and a one-word swap as the Compare page's server
does it: both greedy decodes stepped as one batch (what the decode queue makes of `greedy_pair`), the aligned steps,
every difference map, the head ranking and the default view's two chart specs; against the two decodes one after the
other, the way the page decoded them before). The model's default length limit holds (a random model never emits
</s>, so both decodes run to it: 20 steps, GenerationConfig's default `max_length`).
`python -m bench.speed.patching` runs both; `python -m bench.speed.patching bart` one; `--threads 1` for CPU seconds
that mean something under load (two busy-waiting threads on a loaded machine count their waits as CPU time).
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

from transformer.analysis import (  # noqa: E402
    ENCODER_OUTPUT,
    HEADS,
    compare_edit,
    estimate_patching,
    patch_sites,
    patched_metrics,
    patching_agreement,
    prepare_patching,
    sites_of,
)
from transformer.charts import aligned_difference_heatmap, head_movement_heatmap  # noqa: E402
from transformer.decode import greedy_decode, greedy_decode_many  # noqa: E402

TEXT = "the big dog sees a red house near the small tree and the green bird eats a fish under the blue"
EDITED = TEXT.replace(" dog ", " cat ")
SHORT = "the dog sees a red house near the small tree"  # ~20 source tokens with the test tokenizer
BASELINE_SAMPLE = 12  # sites patched one run at a time to estimate the unbatched time


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


CPU: dict[str, float] = {}  # CPU seconds of each timed part (on a loaded machine, CPU / threads ~ a quiet wall time)


def timed(fn, name: str = ""):
    start, cpu = time.perf_counter(), time.process_time()
    value = fn()
    if name:
        CPU[name] = round(time.process_time() - cpu, 2)
    return value, time.perf_counter() - start


def weights_gb(adapter) -> float:
    return sum(p.numel() * p.element_size() for p in adapter.network.parameters()) / 2**30


def _baseline_s(adapter, setup, site: str) -> float:
    """Seconds to patch every site of `site` one forward each (batch 1), from a sample."""
    sites = sites_of(adapter, setup, [site])
    sample = sites[:: max(1, len(sites) // BASELINE_SAMPLE)][:BASELINE_SAMPLE]
    _, seconds = timed(lambda: patched_metrics(adapter, setup, [s.patches for s in sample], batch=1))
    return seconds / len(sample) * len(sites)


def part_bart() -> dict:
    from bench.common.shapes import bart_large_shape
    with tempfile.TemporaryDirectory() as tmp:
        adapter = bart_large_shape(Path(tmp) / "bart")
        loaded = peak_rss_gb()
        g = torch.Generator().manual_seed(0)
        output = torch.randint(4, len(adapter.tokenizer), (20,), generator=g).tolist()  # 20 output tokens
        setup = prepare_patching(adapter, TEXT, EDITED, step=19, output=output)
        baseline = _baseline_s(adapter, setup, HEADS)
        exact, exact_s = timed(lambda: patch_sites(adapter, setup, [HEADS]), "exact")
        estimate, estimate_s = timed(lambda: estimate_patching(adapter, setup, [HEADS]).frame, "estimate")
        return {"heads": len(exact.frame), "source_tokens": setup.src[1].shape[1], "target_step": 20,
                "exact_s": round(exact_s, 2), "baseline_batch1_s": round(baseline, 1),
                "speedup": round(baseline / exact_s, 2), "estimate_s": round(estimate_s, 2),
                "spearman_estimate_vs_exact": round(patching_agreement(estimate, exact.frame), 3),
                "weights_gb": round(weights_gb(adapter), 2), "rss_after_load_gb": round(loaded, 2),
                "peak_rss_gb": round(peak_rss_gb(), 2), "peak_over_load_gb": round(peak_rss_gb() - loaded, 2),
                "cpu_s": CPU, "threads": torch.get_num_threads()}


def edit_compare_server(adapter, text_a: str, text_b: str):
    """What Compare's edit mode computes on the server for a new pair of inputs: both decodes as one batch, the
    comparison, and the specs of the charts it opens on (B − A of the first kind's first layer, heads' movement)."""
    decoded = tuple(greedy_decode_many(adapter, [text_a, text_b]))
    compared = compare_edit(adapter, text_a, text_b, decoded=decoded)
    kind = compared.a.trace.kinds[0]
    aligned_difference_heatmap(compared.differences[kind], 0, None).to_dict()
    head_movement_heatmap(compared.ranking, kind).to_dict()
    return compared


def part_opus() -> dict:
    from bench.common.shapes import opus_size_marian
    with tempfile.TemporaryDirectory() as tmp:
        adapter = opus_size_marian(Path(tmp) / "marian")
        loaded = peak_rss_gb()
        greedy_decode(adapter, "warm up", max_steps=3)  # one-off costs (first calls into torch) outside every figure
        clean = greedy_decode(adapter, SHORT, max_steps=20)
        output = [s.token_id for s in clean.steps]
        setup = prepare_patching(adapter, SHORT, SHORT.replace(" dog ", " cat "), step=len(output) - 1, output=output)
        baseline = _baseline_s(adapter, setup, ENCODER_OUTPUT)
        encoder, encoder_s = timed(lambda: patch_sites(adapter, setup, [ENCODER_OUTPUT]), "encoder_output")
        decoded, decodes_s = timed(lambda: tuple(greedy_decode(adapter, t) for t in (TEXT, EDITED)),
                                   "two_decodes_one_after_the_other")
        _, batched_s = timed(lambda: greedy_decode_many(adapter, [TEXT, EDITED]), "two_decodes_batched")
        compared, server_s = timed(lambda: edit_compare_server(adapter, TEXT, EDITED), "edit_compare_server")
        _, after_s = timed(lambda: compare_edit(adapter, TEXT, EDITED, decoded=decoded), "edit_compare_cached_decodes")
        maps = sum(d.a.shape[0] * d.a.shape[1] for d in compared.differences.values())
        return {"source_tokens": setup.src[0].shape[1], "encoder_positions": len(encoder.frame),
                "encoder_output_s": round(encoder_s, 2), "encoder_baseline_batch1_s": round(baseline, 2),
                "encoder_speedup": round(baseline / encoder_s, 2),
                "edit_compare_source_tokens": [len(compared.a.trace.source_tokens),
                                               len(compared.b.trace.source_tokens)],
                "output_tokens": [len(compared.a.steps), len(compared.b.steps)],
                "max_steps": adapter.default_max_steps(len(compared.a.trace.source_tokens)),
                "edit_compare_server_s": round(server_s, 2), "two_decodes_one_after_the_other_s": round(decodes_s, 2),
                "two_decodes_batched_s": round(batched_s, 2),
                "server_over_sequential_decodes": round(server_s / decodes_s, 2),
                "edit_compare_with_cached_decodes_s": round(after_s, 2),
                "difference_maps": maps, "cpu_s": CPU, "threads": torch.get_num_threads(),
                "rss_after_load_gb": round(loaded, 2), "peak_rss_gb": round(peak_rss_gb(), 2)}


PARTS = {"opus": part_opus, "bart": part_bart}

if __name__ == "__main__":
    args = sys.argv[1:]
    threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 2
    torch.set_num_threads(threads)
    parts = [a for a in args if a in PARTS]
    if len(parts) == 1 and "--here" in args:
        print(json.dumps(PARTS[parts[0]]()))
        sys.exit(0)
    for name in parts or PARTS:
        done = subprocess.run([sys.executable, "-m", "bench.speed.patching", name, "--here", "--threads",
                               str(threads)], cwd=ROOT, capture_output=True, text=True)
        print(f"{name}: {done.stdout.strip() or done.stderr.strip()[-2000:]}", flush=True)
