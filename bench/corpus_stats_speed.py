"""Head statistics over a corpus and the masked-token view, each beside a baseline measured in the same run:

- `multi30k`: every head of every kind of the shipped Multi30k model over N validation sentences, against the
  model's batched greedy decoding of the same sentences alone (what the statistics cannot avoid); peak memory over
  the model (tracemalloc of Python-side allocations and torch's CPU allocator are not the same thing: we report the
  process's peak resident set growth);
- `bert`: a random BERT-base-shaped masked LM (built from its config, no download) over N sentences of <= 40 tokens,
  against its plain forward passes;
- `mask`: masking a token and redrawing at BERT-base shape with a 40-token input, server side (the page's
  `fill_masks` + the head-change frame + the map's spec), against one plain forward pass.

`PYTHONPATH=. .venv/bin/python -m bench.corpus_stats_speed [multi30k] [bert] [mask] --n 1000`
"""
from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import torch

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "multi30k"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _sentences(n: int) -> list[str]:
    from transformer.data import read_corpus
    return list(read_corpus(DATA / "val.en.gz", cap=n).sources)


def bench_multi30k(n: int) -> None:
    from transformer.analysis import corpus_statistics
    from transformer.store import open_model
    lm = open_model("checkpoints/multi30k-en-de")
    texts = _sentences(n)
    start = time.perf_counter()
    lm.translate(texts)
    base = time.perf_counter() - start
    before = _rss_mb()
    start = time.perf_counter()
    stats = corpus_statistics(lm, texts)
    took = time.perf_counter() - start
    print(f"multi30k: {stats.sentences} sentences, {len(stats.frame)} heads: statistics {took:.1f} s, batched greedy "
          f"alone {base:.1f} s (ratio {took / base:.2f}); peak RSS growth {_rss_mb() - before:.0f} MB")


def _bert_base(folder: Path):
    from tests.helpers.hf_masked_models import BERT_BASE, build
    from transformer.store import open_model
    return open_model(str(build("bert", folder, size=BERT_BASE)))


def bench_bert(n: int) -> None:
    from transformer.analysis import corpus_statistics
    with tempfile.TemporaryDirectory() as tmp:
        lm = _bert_base(Path(tmp) / "bert-base")
        texts = [t for t in _sentences(3 * n) if len(lm.tokenize_source(t).ids) <= 40][:n]
        start = time.perf_counter()
        with lm.running():
            for t in texts:
                lm.model(input_ids=torch.tensor([lm.tokenize_source(t).ids]))
        base = time.perf_counter() - start
        start = time.perf_counter()
        stats = corpus_statistics(lm, texts)
        took = time.perf_counter() - start
    print(f"bert-base shape: {stats.sentences} sentences of <= 40 tokens, {len(stats.frame)} heads: statistics "
          f"{took:.1f} s, plain forwards {base:.1f} s (ratio {took / base:.2f})")


def bench_mask(repeats: int = 5) -> None:
    from transformer.analysis import attention_change
    from transformer.charts import attention_heatmap, head_change_map, prediction_bars
    from transformer.decode import fill_masks
    with tempfile.TemporaryDirectory() as tmp:
        lm = _bert_base(Path(tmp) / "bert-base")
        words = "a man in a blue shirt is standing on a ladder cleaning the windows of a tall building".split()
        text = " ".join(words * 3)
        ids = lm.tokenize_source(text).ids[:39]
        text = lm.tokenizer.decode(ids[1:-1] if ids[0] == lm.tokenizer.cls_token_id else ids)
        n = len(lm.tokenize_source(text).ids)
        plain = fill_masks(lm, text)
        times, bases = [], []
        for r in range(repeats):
            start = time.perf_counter()
            with lm.running():
                lm.model(input_ids=torch.tensor([plain.source.ids]))
            bases.append(time.perf_counter() - start)
            start = time.perf_counter()
            masked = fill_masks(lm, text, mask_positions=[3 + r])
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
    parser.add_argument("parts", nargs="*", default=["multi30k", "bert", "mask"])
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    for part in args.parts:
        {"multi30k": lambda: bench_multi30k(args.n), "bert": lambda: bench_bert(args.n), "mask": bench_mask}[part]()


if __name__ == "__main__":
    main()
