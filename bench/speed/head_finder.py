"""The head finder and a head's page from kept statistics (docs/finding-heads.md; targets: the finder's first draw
≤ 1 s, a head's page ≤ 0.5 s): statistics kept over 1,000 synthetic sentences of 12-40 tokens for every head of a
bart-large-shaped model (12 encoder, 12 decoder and 12 cross-attention layers × 16 heads: 576 heads; random peaked
attention, a Zipf vocabulary of 5,000 words), then the finder (its frame, the scatter and its Vega-Lite spec, the
table) and one head's page (every chart's spec), against the baseline of the corpus statistics' existing cluster map
of one kind (192 x 192 divergences) drawn in the same run. Median of `--repeats`.

`PYTHONPATH=. .venv/bin/python -m bench.speed.head_finder [--repeats 5] [--sentences 1000]`
"""
from __future__ import annotations

import argparse
import statistics
import time

import pandas as pd
import torch

from transformer.analysis import CORPUS_STATISTICS, CorpusStats, HeadExamples, finder_table, head_finder_frame
from transformer.analysis.corpus.head_examples import KindKeep
from transformer.charts import head_finder_chart, head_page_charts, js_cluster_map
from transformer.model import Head

LAYERS, HEADS = 12, 16
KINDS = {"encoder_self": True, "decoder_self": True, "cross": False}  # kind -> queries and keys on one axis


def kept_statistics(sentences: int, seed: int = 0) -> CorpusStats:
    """CorpusStats of 576 heads with their kept examples, token totals and distances over synthetic sentences."""
    g = torch.Generator().manual_seed(seed)
    vocab = [f"▁w{i}" for i in range(5000)]
    zipf = 1 / torch.arange(1, len(vocab) + 1).float()
    keeps = {kind: KindKeep((LAYERS, HEADS), same) for kind, same in KINDS.items()}
    for i in range(sentences):
        n_src, n_tgt = (int(torch.randint(12, 41, (1,), generator=g)) for _ in range(2))
        src = ["<s>", *(vocab[j] for j in torch.multinomial(zipf, n_src - 2, True, generator=g)), "</s>"]
        tgt = ["</s>", *(vocab[j] for j in torch.multinomial(zipf, n_tgt - 1, True, generator=g))]
        for kind, (q, k) in {"encoder_self": (src, src), "decoder_self": (tgt, tgt), "cross": (tgt, src)}.items():
            scores = 3 * torch.randn(LAYERS, HEADS, len(q), len(k), generator=g)
            if kind == "decoder_self":
                scores = scores.masked_fill(torch.ones(len(q), len(k), dtype=torch.bool).triu(1), float("-inf"))
            keeps[kind].add(i, torch.softmax(scores, -1), q, k)
    for keep in keeps.values():
        keep.prune()
    rows = [{"kind": kind, "layer": la, "head": h, **{s: float(torch.rand(1, generator=g)) for s in CORPUS_STATISTICS},
             "rows": 30 * sentences} for kind in KINDS for la in range(LAYERS) for h in range(HEADS)]
    return CorpusStats(pd.DataFrame(rows), {}, sentences, (), 0, "greedy", {}, HeadExamples(keeps))


def timed(fn, repeats: int) -> float:
    """Median milliseconds of fn() over `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sentences", type=int, default=1000)
    args = parser.parse_args()
    start = time.perf_counter()
    stats = kept_statistics(args.sentences)
    print(f"kept statistics of {len(stats.frame)} heads over {args.sentences:,} sentences built in "
          f"{time.perf_counter() - start:.1f} s")
    js = torch.rand(LAYERS * HEADS, LAYERS * HEADS, generator=torch.Generator().manual_seed(1))
    js = (js + js.T) / 2 * (1 - torch.eye(LAYERS * HEADS))

    def baseline() -> None:
        js_cluster_map(js, list(range(LAYERS * HEADS)), HEADS).to_dict(validate=False)

    def finder() -> None:
        frame = head_finder_frame(stats)
        head_finder_chart(frame, "entropy", "max_weight", "kind").to_dict(validate=False)
        finder_table(frame)

    def page() -> None:
        for chart in head_page_charts(stats, Head("decoder_self", 5, 7)).values():
            if chart is not None:
                chart.to_dict(validate=False)

    base = timed(baseline, args.repeats)  # also warms Altair up, as the app's other charts have
    first = timed(finder, 1)  # the finder's first draw: nothing of it cached
    find, one = timed(finder, args.repeats), timed(page, args.repeats)
    print(f"cluster map of 192 heads (baseline): {base:.0f} ms")
    print(f"head finder, 576 heads: first draw {first:.0f} ms (target <= 1000), median {find:.0f} ms "
          f"({find / base:.1f}x the cluster map)")
    print(f"a head's page: median {one:.0f} ms (target <= 500; {one / base:.1f}x the cluster map)")


if __name__ == "__main__":
    main()
