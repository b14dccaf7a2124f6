"""Head statistics over a corpus (Clark et al. 2019, "What does BERT look at?"; Voita et al. 2019, "Analyzing
multi-head self-attention"): per head of every kind, averages over every query row of every sentence, and the heads
clustered by the Jensen-Shannon divergence of their attention distributions.

Each sentence goes through the model as the pages show it: an encoder-decoder's and a decoder-only model's greedy
output (or, with references, the reference), an encoder-only model's one forward pass. The greedy outputs are
decoded in batches without weights (`translate`), then one teacher-forced pass over each output gives its maps
(teacher-forced maps of the model's own output are the step-by-step decode's maps). Per head only
running sums are kept (a few numbers, and one row of the divergence matrix), so memory does not grow with the corpus.

Per query row, with p the row's weights over the keys:
- entropy: -sum p log p (nats; a uniform row over n keys has log n), and max_weight: max p (Voita's confidence);
- first: p of key 0; special: p on special tokens (<s>, </s>, [CLS], [SEP]...); punctuation: p on punctuation;
- same, previous, next: p of key i, i-1, i+1 for query i, and distance: sum_k p_k |k - i| (kinds whose queries and
  keys are the same tokens; NaN for cross-attention).
JS divergence between heads a and b of one kind: JS(p_a, p_b) per query row, averaged over rows (Clark et al. §6),
over the first `js_sentences` sentences.
"""
from __future__ import annotations

import math
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd
import torch

from ...adapters import InspectableModel
from ...data import GoldSource
from ...decode import AttentionTrace, InputError, masked_decode, sink_positions, teacher_forced
from ..heads.alignment import alignment_hits
from .head_examples import HeadExamples, KindKeep, copy_keep

STATISTICS = {
    "entropy": "mean entropy of a row, nats (uniform over n keys: log n)",
    "max_weight": "mean largest weight of a row (confidence, Voita et al. 2019)",
    "first": "mean weight on the first token",
    "special": "mean weight on special tokens ([CLS], [SEP], <s>, </s>...)",
    "punctuation": "mean weight on punctuation",
    "same": "mean weight on the query's own position",
    "previous": "mean weight on the previous position",
    "next": "mean weight on the next position",
    "distance": "mean |key - query| under the row's weights",
    "alignment": "cross-attention: share of output tokens whose gold source token gets the head's largest weight "
                 "(where the corpus has gold alignments)",
}
JS_SENTENCES = 100
BATCH = 64  # sentences decoded at once for their greedy outputs
PUNCTUATION = set(string.punctuation) | set("«»“”‘’„…–—¿¡")
_MARKS = "▁Ġ#Ċ "


def is_punctuation(token: str) -> bool:
    """A token of punctuation only (word-start marks such as ▁, Ġ or ## stripped)."""
    core = token.strip(_MARKS)
    return bool(core) and all(c in PUNCTUATION for c in core)


@dataclass
class _KindSums:
    sums: dict[str, torch.Tensor]  # statistic -> (L, H) running sum over rows
    rows: int = 0
    js: torch.Tensor | None = None  # (N, N) running sum of per-row JS over rows, N = L * H
    js_rows: int = 0
    hits: torch.Tensor | None = None  # (L, H) gold-aligned rows whose largest weight is on the gold source token
    aligned: int = 0  # rows with a gold source token
    per_sentence: dict[int, torch.Tensor] = field(default_factory=dict)  # sentence index -> (L, H) mean entropy
    keep: KindKeep | None = None  # the bounded examples, token totals and distances (head_examples.py)


@dataclass(frozen=True)
class CorpusStats:
    """Per head statistics (`frame`: kind, layer, head, one column per STATISTICS entry, rows), the JS divergence
    between each kind's heads (`js[kind]`, (N, N) with N = layers x heads, head n = layer n // H, head n % H), and
    what was read."""

    frame: pd.DataFrame
    js: dict[str, torch.Tensor] = field(repr=False)
    sentences: int
    skipped: tuple[str, ...]  # one line per sentence that could not be read, why
    js_sentences: int
    mode: str  # "greedy", "reference" (teacher-forced) or "masked" (encoder-only, one forward pass)
    entropies: dict[str, dict[int, torch.Tensor]] = field(default_factory=dict, repr=False)  # kind -> i -> (L, H)
    kept: HeadExamples | None = field(default=None, repr=False)  # examples by decile, token totals, distances

    def examples(self, kind: str, layer: int, head: int, n: int = 3) -> tuple[list[int], list[int]]:
        """The sentences (corpus indices) where the head's mean entropy is nearest its corpus average, and those
        where it is furthest from it: (most like its average, least like it), n each, nearest / furthest first."""
        rows = self.frame.query("kind == @kind and layer == @layer and head == @head")
        if rows.empty:
            raise KeyError(f"no head {kind} layer {layer + 1} head {head + 1} in these statistics")
        mean = float(rows["entropy"].iloc[0])
        gaps = sorted((abs(float(e[layer, head]) - mean), i) for i, e in self.entropies.get(kind, {}).items())
        return [i for _, i in gaps[:n]], [i for _, i in reversed(gaps[-n:])]

    def ranked(self, statistic: str = "max_weight", ascending: bool = False) -> pd.DataFrame:
        """The heads sorted by a statistic (Voita et al.: by confidence, most confident first)."""
        if statistic not in STATISTICS:
            raise KeyError(f"unknown statistic {statistic!r}; expected one of {', '.join(STATISTICS)}")
        return self.frame.sort_values(statistic, ascending=ascending, kind="stable").reset_index(drop=True)

    def clusters(self, kind: str) -> list[int]:
        """The kind's heads (0-based n = layer * H + head) in the leaf order of average-linkage clustering on JS."""
        return average_linkage_order(self.js[kind])

    def to_dict(self) -> dict:
        """The corpus statistics JSON (docs/formats.md): per head statistics, JS matrices, what was read."""
        return {"mode": self.mode, "sentences": self.sentences, "skipped": list(self.skipped),
                "js_sentences": self.js_sentences, "statistics": STATISTICS,
                "heads": self.frame.astype(object).where(self.frame.notna(), None).to_dict(orient="records"),
                "js": {k: [[round(float(v), 6) for v in row] for row in m] for k, m in self.js.items()},
                "clusters": {k: self.clusters(k) for k in self.js},
                "examples": [{"kind": k, "layer": la, "head": h,
                              **dict(zip(("most", "least"), self.examples(k, la, h), strict=True))}
                             for k, la, h in zip(self.frame["kind"], self.frame["layer"], self.frame["head"],
                                                 strict=True)],
                **({"decile_examples": self.kept.to_dict()} if self.kept is not None else {})}


def average_linkage_order(distance: torch.Tensor) -> list[int]:
    """Leaf order of average-linkage agglomerative clustering of a symmetric distance matrix (N, N): at each merge the
    closest pair of clusters (mean distance between their members; the first such pair in index order), the later
    one's members appended to the earlier one's. The clusters' distances are updated by Lance and Williams' (1967)
    rule for average linkage, d(a ∪ b, c) = (|a| d(a, c) + |b| d(b, c)) / (|a| + |b|): O(N^2) a merge."""
    n = distance.shape[0]
    d = distance.double().clone()
    d.fill_diagonal_(math.inf)
    d = d.triu(1) + torch.full_like(d, math.inf).tril()  # pairs (x < y) only
    sizes = [1] * n
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    full = distance.double().clone()  # the symmetric cluster distances, updated in place
    for _ in range(n - 1):
        a, b = divmod(int(d.argmin()), n)  # the first minimum in row-major order: x < y, as the pairs are read
        merged = (sizes[a] * full[a] + sizes[b] * full[b]) / (sizes[a] + sizes[b])
        full[a], full[:, a] = merged, merged
        sizes[a] += sizes[b]
        members[a] += members.pop(b)
        full[b], full[:, b] = math.inf, math.inf
        d[b], d[:, b] = math.inf, math.inf
        row = full[a].clone()
        row[: a + 1] = math.inf
        d[a] = row
        col = full[:, a].clone()
        col[a:] = math.inf
        d[:, a] = col
    return next(iter(members.values()))


def _trace(adapter: InspectableModel, text: str, output: str | None) -> AttentionTrace:
    """The maps of one sentence: an encoder-only model's forward pass, else the teacher-forced pass on `output`."""
    if not adapter.family.decodes:
        return masked_decode(adapter, text, top_k=1).trace
    return teacher_forced(adapter, text, output or "", top_k=1).trace


def _one_output(adapter: InspectableModel, text: str) -> str | None:
    try:
        return adapter.translate([text])[0]
    except InputError:
        return None


def _row_statistics(w: torch.Tensor, q_tokens: Sequence[str], k_tokens: Sequence[str], same_axis: bool
                    ) -> dict[str, torch.Tensor]:
    """Per statistic, (L, H) sums over the rows of one sentence's weights w (L, H, Q, K)."""
    q, k = w.shape[-2:]
    logs = torch.where(w > 0, w.clamp(min=1e-30).log(), torch.zeros_like(w))
    out = {"entropy": -(w * logs).sum(-1).sum(-1), "max_weight": w.max(-1).values.sum(-1),
           "first": w[..., 0].sum(-1)}
    special = list(sink_positions(k_tokens, first=False))
    out["special"] = w[..., special].sum(-1).sum(-1) if special else torch.zeros(w.shape[:2])
    punct = [i for i, t in enumerate(k_tokens) if is_punctuation(t)]
    out["punctuation"] = w[..., punct].sum(-1).sum(-1) if punct else torch.zeros(w.shape[:2])
    if same_axis and q == k:
        eye = torch.arange(q)
        out["same"] = w[..., eye, eye].sum(-1)
        out["previous"] = w[..., eye[1:], eye[1:] - 1].sum(-1)
        out["next"] = w[..., eye[:-1], eye[:-1] + 1].sum(-1)
        gap = (eye[None, :] - eye[:, None]).abs().float()  # (Q, K)
        out["distance"] = (w * gap).sum(-1).sum(-1)
    else:
        for name in ("same", "previous", "next", "distance"):
            out[name] = torch.full(w.shape[:2], float("nan"))
    return out


def _js_rows(w: torch.Tensor, chunk: int = 16) -> torch.Tensor:
    """(N, N) sum over rows of JS(p_a, p_b) for the heads of w (N, Q, K), in nats."""
    n = w.shape[0]
    ent = -(w * torch.where(w > 0, w.clamp(min=1e-30).log(), torch.zeros_like(w))).sum(-1)  # (N, Q)
    out = torch.zeros(n, n, dtype=torch.float64)
    for start in range(0, n, chunk):
        a = w[start:start + chunk, None]  # (c, 1, Q, K)
        m = 0.5 * (a + w[None])  # (c, N, Q, K)
        h_m = -(m * torch.where(m > 0, m.clamp(min=1e-30).log(), torch.zeros_like(m))).sum(-1)  # (c, N, Q)
        js = h_m - 0.5 * (ent[start:start + chunk, None] + ent[None])
        out[start:start + chunk] = js.clamp(min=0).sum(-1).double()
    return out


@dataclass
class CorpusSums:
    """The running sums of one process's share of a corpus: what `merge_sums` adds up across processes and
    `stats_from_sums` turns into `CorpusStats`."""

    kinds: dict[str, _KindSums]
    sentences: int
    skipped: list[tuple[int, str]]  # (sentence index, why)
    js_sentences: int
    mode: str


def _outputs_of(adapter: InspectableModel, sources: Sequence[str], indices: Sequence[int]) -> list[str | None]:
    """The greedy outputs of the sentences at `indices` (None for an encoder-only model, which has none)."""
    chunk = [sources[i] for i in indices]
    if not adapter.family.decodes:
        return [None] * len(chunk)
    try:
        return list(adapter.translate(chunk))
    except InputError:  # a sentence the batch cannot take: one at a time, each failing on its own
        return [_one_output(adapter, text) for text in chunk]


def corpus_sums(adapter: InspectableModel, sources: Sequence[str], references: Sequence[str] | None = None, *,
                shard: tuple[int, int] = (0, 1), js_sentences: int = JS_SENTENCES,
                progress: Callable[[int, int], None] | None = None, stop: Callable[[], bool] | None = None,
                gold: Callable[[str], Sequence[GoldSource] | None] | None = None) -> CorpusSums:
    """The sums over this process's sentences: those whose index i has i % world == rank (`shard` = (rank,
    world)); the divergences over the sentences with i < `js_sentences`, whichever process reads them."""
    spec = adapter.family
    rank, world = shard
    mine = list(range(rank, len(sources), world))
    sums: dict[str, _KindSums] = {}
    skipped: list[tuple[int, str]] = []
    done = js_done = 0
    outputs: list[str | None] = []
    for n, i in enumerate(mine):
        if stop is not None and stop():
            break
        if references is None and n % BATCH == 0:
            outputs = _outputs_of(adapter, sources, mine[n:n + BATCH])
        text = sources[i]
        output = references[i] if references is not None else outputs[n % BATCH]
        try:
            if output is None and spec.decodes:
                raise InputError("the model could not decode it")
            trace = _trace(adapter, text, output)
        except InputError as exc:
            skipped.append((i, str(exc)))
            continue
        done += 1
        with_js = i < js_sentences
        js_done += with_js
        for kind in trace.kinds:
            w = trace.weights(kind).float()
            q_tokens, k_tokens = trace.labels(kind)
            q_axis, k_axis = spec.axes[kind]
            stats = _row_statistics(w, q_tokens, k_tokens, q_axis == k_axis)
            entry = sums.get(kind)
            if entry is None:
                entry = sums[kind] = _KindSums({name: torch.zeros(w.shape[:2], dtype=torch.float64)
                                                for name in STATISTICS if name != "alignment"},
                                               keep=KindKeep((int(w.shape[0]), int(w.shape[1])), q_axis == k_axis))
            for name, value in stats.items():
                entry.sums[name] += value.double()
            entry.rows += w.shape[2]
            entry.per_sentence[i] = (stats["entropy"] / w.shape[2]).float()
            if entry.keep is not None:
                entry.keep.add(i, w, q_tokens, k_tokens)
            if gold is not None and kind == spec.cross_kind and (aligned := gold(text)):
                hits, count = alignment_hits(w, aligned)
                entry.hits = hits[:, :-1].double() if entry.hits is None else entry.hits + hits[:, :-1].double()
                entry.aligned += count
            if with_js:
                part = _js_rows(w.reshape(-1, *w.shape[2:]))
                entry.js = part if entry.js is None else entry.js + part
                entry.js_rows += w.shape[2]
        if progress is not None:
            progress(n + 1, len(mine))
    mode = "masked" if not spec.decodes else "reference" if references is not None else "greedy"
    return CorpusSums(sums, done, skipped, js_done, mode)


def _add(a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    return b if a is None else a if b is None else a + b


def merge_sums(parts: Sequence[CorpusSums]) -> CorpusSums:
    """Several processes' sums as one process's (the sums add; skipped sentences in corpus order)."""
    kinds: dict[str, _KindSums] = {}
    for part in parts:
        for kind, entry in part.kinds.items():
            have = kinds.get(kind)
            if have is None:
                kinds[kind] = _KindSums({k: v.clone() for k, v in entry.sums.items()}, entry.rows, entry.js,
                                        entry.js_rows, entry.hits, entry.aligned, dict(entry.per_sentence),
                                        None if entry.keep is None else copy_keep(entry.keep))
                continue
            if have.keep is not None and entry.keep is not None:
                have.keep.merge(entry.keep)
            have.per_sentence.update(entry.per_sentence)
            for name, value in entry.sums.items():
                have.sums[name] = have.sums[name] + value
            have.rows += entry.rows
            have.js, have.js_rows = _add(have.js, entry.js), have.js_rows + entry.js_rows
            have.hits, have.aligned = _add(have.hits, entry.hits), have.aligned + entry.aligned
    return CorpusSums(kinds, sum(p.sentences for p in parts), sorted(s for p in parts for s in p.skipped),
                      sum(p.js_sentences for p in parts), parts[0].mode if parts else "greedy")


def stats_from_sums(sums: CorpusSums) -> CorpusStats:
    """The per-head averages of the sums; InputError when no sentence was read."""
    if sums.sentences == 0:
        why = f"line {sums.skipped[0][0] + 1}: {sums.skipped[0][1]}" if sums.skipped else "it is empty"
        raise InputError("no sentence of the corpus could be read: " + why)
    rows = []
    for kind, entry in sums.kinds.items():
        n_layers, n_heads = next(iter(entry.sums.values())).shape
        for layer in range(n_layers):
            for head in range(n_heads):
                row = {"kind": kind, "layer": layer, "head": head}
                row.update({name: float(entry.sums[name][layer, head]) / entry.rows for name in STATISTICS
                            if name != "alignment"})
                row["alignment"] = (float(entry.hits[layer, head]) / entry.aligned if entry.hits is not None
                                    and entry.aligned else float("nan"))
                row["rows"] = entry.rows
                rows.append(row)
    js = {kind: (entry.js / max(entry.js_rows, 1)).float() for kind, entry in sums.kinds.items()
          if entry.js is not None}
    skipped = tuple(f"line {i + 1}: {why}" for i, why in sums.skipped)
    entropies = {kind: dict(entry.per_sentence) for kind, entry in sums.kinds.items()}
    keeps = {kind: entry.keep for kind, entry in sums.kinds.items() if entry.keep is not None}
    for keep in keeps.values():
        keep.prune()
    return CorpusStats(pd.DataFrame(rows), js, sums.sentences, skipped, sums.js_sentences, sums.mode, entropies,
                       HeadExamples(keeps) if keeps else None)


def corpus_statistics(adapter: InspectableModel, sources: Sequence[str], references: Sequence[str] | None = None, *,
                      js_sentences: int = JS_SENTENCES, progress: Callable[[int, int], None] | None = None,
                      stop: Callable[[], bool] | None = None,
                      gold: Callable[[str], Sequence[GoldSource] | None] | None = None) -> CorpusStats:
    """Every head's statistics over the sentences (teacher-forced on `references` when given); a sentence the model
    cannot read is skipped and said; `progress(done, total)` after each, `stop()` ends early (what was read so far).
    `gold(sentence)`: the source position of each output token, where the task knows it (cross-attention's
    alignment column; as `eval` scores it, row j of the cross-attention against the j-th output token)."""
    return stats_from_sums(corpus_sums(adapter, sources, references, js_sentences=js_sentences, progress=progress,
                                       stop=stop, gold=gold))


def snapshot_curves(steps: list[int], stats: list[CorpusStats]) -> dict[str, object]:
    """The statistics over each snapshot as curves (docs/formats.md): `steps`, and per head every statistic's
    value at each step."""
    heads, frames = [], [s.frame.set_index(["kind", "layer", "head"]) for s in stats]
    for row in stats[0].frame.itertuples():
        values = [f.loc[(row.kind, row.layer, row.head)] for f in frames]
        heads.append({"kind": row.kind, "layer": int(row.layer), "head": int(row.head),
                      **{name: [float(v[name]) for v in values] for name in STATISTICS}})
    return {"steps": steps, "mode": stats[0].mode, "sentences": [s.sentences for s in stats],
            "statistics": STATISTICS, "heads": heads}
