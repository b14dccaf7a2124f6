"""Head statistics over a corpus and the masked-token view, each beside a baseline measured in the same run:

- `multi30k`: every head of every kind of the shipped Multi30k model over N validation sentences, against the
  model's batched greedy decoding of the same sentences alone (what the statistics cannot avoid);
- `memory`: the memory the statistics take over the model, in a fresh process (a child started for it): its resident
  set (VmRSS of /proc/self/status, which counts torch's CPU tensors and Python's objects alike; tracemalloc would see
  Python's allocations only) after loading the shipped Multi30k model, reading the sentences and warming up on one
  sentence, against the peak a thread sampling VmRSS every 5 ms sees while every head of every kind is summed over
  N validation sentences (VmHWM, the kernel's own peak, beside it);
- `bert`: a random BERT-base-shaped masked LM (built from its config, no download) over N sentences of <= 40 tokens,
  against its plain forward passes;
- `mask`: masking a token and redrawing at BERT-base shape with a 40-token input, server side (the page's
  `fill_masks` + the head-change frame + the map's spec), against one plain forward pass.

`PYTHONPATH=. .venv/bin/python -m bench.speed.corpus_stats [multi30k] [memory] [bert] [mask] --n 1000`
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

LONG = True  # 1,000 sentences and a BERT-base-shaped corpus: minutes even when quiet

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "multi30k"


def _status_mb(field: str) -> float:
    """A field of /proc/self/status (VmRSS: resident now; VmHWM: the peak resident set), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _sentences(n: int) -> list[str]:
    from transformer.data import read_corpus
    return list(read_corpus(DATA / "val.en.gz", cap=n).sources)


def bench_multi30k(n: int) -> None:
    from transformer.analysis import corpus_statistics
    from transformer.store import open_model
    adapter = open_model("checkpoints/multi30k-en-de")
    texts = _sentences(n)
    start = time.perf_counter()
    adapter.translate(texts)
    base = time.perf_counter() - start
    start = time.perf_counter()
    stats = corpus_statistics(adapter, texts)
    took = time.perf_counter() - start
    print(f"multi30k: {stats.sentences} sentences, {len(stats.frame)} heads: statistics {took:.1f} s, batched greedy "
          f"alone {base:.1f} s (ratio {took / base:.2f})")


def bench_memory(n: int) -> None:
    """In a child process, so that nothing an earlier part allocated counts."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    subprocess.run([sys.executable, "-m", "bench.speed.corpus_stats", "_memory", "--n", str(n)], check=True, env=env)


def _memory(n: int) -> None:
    from transformer.analysis import corpus_statistics
    from transformer.store import open_model
    empty = _status_mb("VmRSS")
    adapter = open_model("checkpoints/multi30k-en-de")
    texts = _sentences(n)
    corpus_statistics(adapter, texts[:1])  # the warm-up: one decode and one teacher-forced pass with weights
    loaded = _status_mb("VmRSS")
    peak = [loaded]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _status_mb("VmRSS"))
            done.wait(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    stats = corpus_statistics(adapter, texts)
    took = time.perf_counter() - start
    done.set()
    sampler.join()
    peak[0] = max(peak[0], _status_mb("VmRSS"))
    print(f"memory, multi30k: {stats.sentences} sentences, {len(stats.frame)} heads in {took:.1f} s: resident "
          f"{empty:.0f} MB before the model, {loaded:.0f} MB with it loaded and warmed up, peak {peak[0]:.0f} MB "
          f"during the statistics (VmHWM {_status_mb('VmHWM'):.0f} MB): {peak[0] - loaded:.0f} MB over the model")


def _bert_base(folder: Path):
    from tests.helpers.hf_masked_models import BERT_BASE, build
    from transformer.store import open_model
    return open_model(str(build("bert", folder, size=BERT_BASE)))


def bench_bert(n: int) -> None:
    from transformer.analysis import corpus_statistics
    with tempfile.TemporaryDirectory() as tmp:
        adapter = _bert_base(Path(tmp) / "bert-base")
        texts = [t for t in _sentences(3 * n) if len(adapter.tokenize_source(t).ids) <= 40][:n]
        start = time.perf_counter()
        with adapter.running():
            for t in texts:
                adapter.model(input_ids=torch.tensor([adapter.tokenize_source(t).ids]))
        base = time.perf_counter() - start
        start = time.perf_counter()
        stats = corpus_statistics(adapter, texts)
        took = time.perf_counter() - start
    print(f"bert-base shape: {stats.sentences} sentences of <= 40 tokens, {len(stats.frame)} heads: statistics "
          f"{took:.1f} s, plain forwards {base:.1f} s (ratio {took / base:.2f})")


def bench_mask(repeats: int = 5) -> None:
    from transformer.analysis import attention_change
    from transformer.charts import attention_heatmap, head_change_map, prediction_bars
    from transformer.decode import fill_masks
    with tempfile.TemporaryDirectory() as tmp:
        adapter = _bert_base(Path(tmp) / "bert-base")
        words = "a man in a blue shirt is standing on a ladder cleaning the windows of a tall building".split()
        text = " ".join(words * 3)
        ids = adapter.tokenize_source(text).ids[:39]
        text = adapter.tokenizer.decode(ids[1:-1] if ids[0] == adapter.tokenizer.cls_token_id else ids)
        n = len(adapter.tokenize_source(text).ids)
        plain = fill_masks(adapter, text)
        times, bases = [], []
        for r in range(repeats):
            start = time.perf_counter()
            with adapter.running():
                adapter.model(input_ids=torch.tensor([plain.source.ids]))
            bases.append(time.perf_counter() - start)
            start = time.perf_counter()
            masked = fill_masks(adapter, text, mask_positions=[3 + r])
            frame = attention_change(plain.trace, masked.trace)
            for chart in (prediction_bars(masked.predictions[0]), head_change_map(frame, "encoder_self"),
                          attention_heatmap(masked.trace, "encoder_self", 11, None)):
                chart.to_dict()
            times.append(time.perf_counter() - start)
    times.sort()
    bases.sort()
    print(f"mask and redraw, bert-base shape, {n} tokens: median {times[len(times) // 2]:.3f} s, one plain forward "
          f"{bases[len(bases) // 2]:.3f} s (ratio {times[len(times) // 2] / bases[len(bases) // 2]:.1f})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("parts", nargs="*", default=["multi30k", "memory", "bert", "mask"])
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    for part in args.parts:
        {"multi30k": lambda: bench_multi30k(args.n), "memory": lambda: bench_memory(args.n),
         "_memory": lambda: _memory(args.n), "bert": lambda: bench_bert(args.n), "mask": bench_mask}[part]()


if __name__ == "__main__":
    main()
