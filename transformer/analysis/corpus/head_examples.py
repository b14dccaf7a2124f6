"""What the corpus pass keeps per head beside its running sums, bounded (HeadVis, Anthropic 2026: a head's page shows
its strongest examples, its attention distances and the tokens it attends from and to):

- **decile examples**: per head and decile of its peak weight (the row's largest weight on a key that is neither the
  first token nor a special; rows with no such weight are left out), the `TOP_ROWS` rows with the largest peaks:
  sentence, query, peak key, peak weight and the row itself (to draw);
- **token totals**: per head the total weight each token receives as a key (`to`) and puts on keys as a query
  (`from`), the first token and specials left out as keys; one table of tokens per kind, exact up to `TOKEN_TABLE`
  distinct tokens, then pruned to the tokens in some head's top `TOKEN_KEEP` (the totals of the others are dropped);
- **distance histogram**: per head of a kind whose queries and keys are the same tokens, the weight at each distance
  |k − q| in the bins `DISTANCE_EDGES` (every key, as the `distance` statistic counts them).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ...decode import sink_positions
from ...model import Head

DECILES = 10
TOP_ROWS = 3  # kept rows per head and decile
TOP_TOKENS = 20  # tokens shown per head and direction
TOKEN_TABLE = 4096  # distinct tokens a kind's table holds before it is pruned
TOKEN_KEEP = 80  # per head and direction, the tokens a pruning keeps
DISTANCE_EDGES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
                  2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536)
_PRUNE_EVERY = 32  # sentences between droppings of rows no longer kept


def distance_bin_labels() -> list[str]:
    """'0', '1', ..., '8–11', ..., '≥ 65536': one label a bin."""
    out = []
    for lo, hi in zip(DISTANCE_EDGES, (*DISTANCE_EDGES[1:], None), strict=True):
        out.append(f"≥ {lo}" if hi is None else str(lo) if hi == lo + 1 else f"{lo}–{hi - 1}")
    return out


def peak_of_rows(w: Tensor, k_tokens: Sequence[str]) -> tuple[Tensor, Tensor]:
    """(peak weight, peak key) of each row of w (..., Q, K), the first token and special keys left out; a row with
    no weight elsewhere has peak 0."""
    masked = w.clone()
    masked[..., list(sink_positions(k_tokens))] = -1.0
    peak, key = masked.max(-1)
    return peak.clamp(min=0.0), key


def decile_of(peak: Tensor) -> Tensor:
    """The decile (0..9) of each peak weight: [d/10, (d+1)/10), a peak of 1 in the top one."""
    return (peak * DECILES).floor().long().clamp(0, DECILES - 1)


def _top(peaks: Tensor) -> tuple[Tensor, Tensor]:
    """The TOP_ROWS largest along the last axis and their positions; of equal peaks the earlier one."""
    values, idx = peaks.sort(dim=-1, descending=True, stable=True)
    return values[..., :TOP_ROWS], idx[..., :TOP_ROWS]


@dataclass
class KindKeep:
    """One kind's kept data over the sentences read so far."""

    shape: tuple[int, int]  # (layers, heads)
    same_axis: bool
    peaks: Tensor = field(init=False)  # (L, H, D, R): kept peak weights, -1 where empty
    sentence: Tensor = field(init=False)  # (L, H, D, R) corpus index
    query: Tensor = field(init=False)
    key: Tensor = field(init=False)
    rows: dict[tuple[int, int, int, int], Tensor] = field(default_factory=dict)  # (sentence, layer, head, query)
    tokens: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)  # i -> (queries, keys)
    vocab: dict[str, int] = field(default_factory=dict)
    to_totals: Tensor = field(init=False)  # (L, H, V)
    from_totals: Tensor = field(init=False)
    distances: Tensor | None = field(init=False)  # (L, H, bins), None for cross-attention
    added: int = 0

    def __post_init__(self) -> None:
        n_layers, n_heads = self.shape
        self.peaks = torch.full((n_layers, n_heads, DECILES, TOP_ROWS), -1.0)
        self.sentence, self.query, self.key = (torch.zeros_like(self.peaks, dtype=torch.long) for _ in range(3))
        self.to_totals = torch.zeros(n_layers, n_heads, 64, dtype=torch.float64)
        self.from_totals = torch.zeros_like(self.to_totals)
        self.distances = (torch.zeros(n_layers, n_heads, len(DISTANCE_EDGES), dtype=torch.float64)
                          if self.same_axis else None)

    def _ids(self, tokens: Sequence[str]) -> Tensor:
        ids = [self.vocab.setdefault(t, len(self.vocab)) for t in tokens]
        if len(self.vocab) > self.to_totals.shape[-1]:
            grow = max(len(self.vocab), 2 * self.to_totals.shape[-1])
            pad = (0, grow - self.to_totals.shape[-1])
            self.to_totals = torch.nn.functional.pad(self.to_totals, pad)
            self.from_totals = torch.nn.functional.pad(self.from_totals, pad)
        return torch.tensor(ids, dtype=torch.long)

    def add(self, i: int, w: Tensor, q_tokens: Sequence[str], k_tokens: Sequence[str]) -> None:
        """Sentence i's weights w (L, H, Q, K) of this kind."""
        n_layers, n_heads, n_q, n_k = w.shape
        peak, key = peak_of_rows(w, k_tokens)  # (L, H, Q)
        cand = torch.full((n_layers, n_heads, DECILES, n_q), -1.0)
        cand.scatter_(2, decile_of(peak).unsqueeze(2), torch.where(peak > 0, peak, -1.0).unsqueeze(2))
        top, idx = _top(torch.cat([self.peaks, cand], -1))  # old rows are earlier sentences: ties keep them
        old, new_q = idx.clamp(max=TOP_ROWS - 1), (idx - TOP_ROWS).clamp(min=0)
        fresh = idx >= TOP_ROWS
        new_key = key.unsqueeze(2).expand(-1, -1, DECILES, -1).gather(-1, new_q)
        self.sentence = torch.where(fresh, i, self.sentence.gather(-1, old))
        self.query = torch.where(fresh, new_q, self.query.gather(-1, old))
        self.key = torch.where(fresh, new_key, self.key.gather(-1, old))
        self.peaks = top
        picked = (fresh & (top > 0)).nonzero()
        if len(picked):
            la, he, q = picked[:, 0], picked[:, 1], new_q[fresh & (top > 0)]
            for row, a, b, c in zip(w[la, he, q].float().clone(), la.tolist(), he.tolist(), q.tolist(), strict=True):
                self.rows[(i, a, b, c)] = row
            self.tokens[i] = (tuple(q_tokens), tuple(k_tokens))
        plain = w.double().clone()
        plain[..., list(sink_positions(k_tokens))] = 0.0
        q_ids, k_ids = self._ids(q_tokens), self._ids(k_tokens)
        self.to_totals.index_add_(2, k_ids, plain.sum(2))
        self.from_totals.index_add_(2, q_ids, plain.sum(3))
        if self.distances is not None and n_q == n_k:
            eye = torch.arange(n_q)
            gap = (eye[None, :] - eye[:, None]).abs()
            bins = torch.bucketize(gap.flatten(), torch.tensor(DISTANCE_EDGES), right=True) - 1
            flat = w.double().reshape(n_layers * n_heads, n_q * n_k)
            self.distances.view(n_layers * n_heads, -1).index_add_(1, bins, flat)
        self.added += 1
        if self.added % _PRUNE_EVERY == 0:
            self.prune()

    def prune(self) -> None:
        """Drop the rows and tokens no kept example refers to; a table over TOKEN_TABLE tokens to each head's top."""
        live = self.peaks > 0
        n_layers, n_heads = self.shape
        la = torch.arange(n_layers)[:, None, None, None].expand_as(self.peaks)[live].tolist()
        he = torch.arange(n_heads)[None, :, None, None].expand_as(self.peaks)[live].tolist()
        keys = set(zip(self.sentence[live].tolist(), la, he, self.query[live].tolist(), strict=True))
        self.rows = {k: v for k, v in self.rows.items() if k in keys}
        used = {k[0] for k in keys}
        self.tokens = {i: t for i, t in self.tokens.items() if i in used}
        if len(self.vocab) > TOKEN_TABLE:
            n = len(self.vocab)
            keep = torch.zeros(n, dtype=torch.bool)
            for totals in (self.to_totals[..., :n], self.from_totals[..., :n]):
                keep[totals.topk(min(TOKEN_KEEP, n), -1).indices.flatten()] = True
            kept = keep.nonzero().flatten()
            names = list(self.vocab)
            self.vocab = {names[j]: k for k, j in enumerate(kept.tolist())}
            self.to_totals, self.from_totals = self.to_totals[..., kept], self.from_totals[..., kept]

    def merge(self, other: KindKeep) -> None:
        """Another process's kept data of the same kind added to this one."""
        both = {name: torch.cat([getattr(self, name), getattr(other, name)], -1)
                for name in ("peaks", "sentence", "query", "key")}
        order = (both["sentence"] * 1_000_000 + both["query"]).argsort(dim=-1, stable=True)  # ties: as one process
        both = {name: value.gather(-1, order) for name, value in both.items()}
        top, idx = _top(both["peaks"])
        for name in ("sentence", "query", "key"):
            setattr(self, name, both[name].gather(-1, idx))
        self.peaks = top
        self.rows.update(other.rows)
        self.tokens.update(other.tokens)
        ids = self._ids(list(other.vocab))
        n = len(other.vocab)
        self.to_totals.index_add_(2, ids, other.to_totals[..., :n])
        self.from_totals.index_add_(2, ids, other.from_totals[..., :n])
        if self.distances is not None and other.distances is not None:
            self.distances += other.distances
        self.prune()


def copy_keep(keep: KindKeep) -> KindKeep:
    """A copy that merging into leaves `keep` as it was."""
    out = KindKeep(keep.shape, keep.same_axis)
    out.merge(keep)
    return out


@dataclass(frozen=True)
class HeadExamples:
    """The kept data of every kind (`kinds`), read per head: its examples by decile, top tokens, distances."""

    kinds: dict[str, KindKeep]

    def _keep(self, kind: str) -> KindKeep:
        if kind not in self.kinds:
            raise KeyError(f"no kept examples of {kind!r}; these statistics have {', '.join(self.kinds)}")
        return self.kinds[kind]

    def examples(self, kind: str, layer: int, head: int) -> list[dict]:
        """The head's kept rows, top decile first and the largest peak first within one: each `decile`, `sentence`,
        `query`, `key`, `peak`, `row` (the weights over the keys), `queries` and `keys` (the sentence's tokens)."""
        keep = self._keep(kind)
        out = []
        for d in reversed(range(DECILES)):
            for r in range(TOP_ROWS):
                peak = float(keep.peaks[layer, head, d, r])
                if peak <= 0:
                    continue
                i, q = int(keep.sentence[layer, head, d, r]), int(keep.query[layer, head, d, r])
                queries, keys = keep.tokens[i]
                out.append({"decile": d, "sentence": i, "query": q, "key": int(keep.key[layer, head, d, r]),
                            "peak": peak, "row": keep.rows[(i, layer, head, q)].tolist(), "queries": queries,
                            "keys": keys})
        return out

    def top_tokens(self, kind: str, layer: int, head: int, direction: str = "to", n: int = TOP_TOKENS
                   ) -> list[tuple[str, float]]:
        """The n tokens with the largest total weight, as keys (`to`) or as queries (`from`): (token, total)."""
        keep = self._keep(kind)
        totals = (keep.to_totals if direction == "to" else keep.from_totals)[layer, head, :len(keep.vocab)]
        names = list(keep.vocab)
        values, idx = totals.topk(min(n, len(names)))
        return [(names[j], float(v)) for v, j in zip(values.tolist(), idx.tolist(), strict=True) if v > 0]

    def token_totals(self, kind: str, layer: int, head: int, direction: str = "to") -> dict[str, float]:
        """Every kept token's total weight for the head (see `top_tokens`)."""
        return dict(self.top_tokens(kind, layer, head, direction, n=len(self._keep(kind).vocab)))

    def distance_histogram(self, kind: str, layer: int, head: int) -> list[float] | None:
        """The head's total weight in each distance bin (DISTANCE_EDGES); None for cross-attention."""
        keep = self._keep(kind)
        return None if keep.distances is None else keep.distances[layer, head].tolist()

    def to_dict(self) -> dict:
        """The `decile_examples` JSON (docs/formats.md)."""
        kinds = {}
        for kind, keep in self.kinds.items():
            heads: list[dict] = []
            used: set[int] = set()
            for layer in range(keep.shape[0]):
                for head in range(keep.shape[1]):
                    rows = self.examples(kind, layer, head)
                    used.update(r["sentence"] for r in rows)
                    hist = self.distance_histogram(kind, layer, head)
                    heads.append({
                        "label": Head(kind, layer, head).label, "layer": layer, "head": head,
                        "examples": [{k: (round(v, 6) if k == "peak" else [round(x, 5) for x in v] if k == "row"
                                          else v) for k, v in r.items() if k not in ("queries", "keys")}
                                     for r in rows],
                        "from": [[t, round(v, 6)] for t, v in self.top_tokens(kind, layer, head, "from")],
                        "to": [[t, round(v, 6)] for t, v in self.top_tokens(kind, layer, head, "to")],
                        "distance": None if hist is None else [round(v, 6) for v in hist]})
            kinds[kind] = {"sentences": {str(i): {"queries": list(keep.tokens[i][0]), "keys": list(keep.tokens[i][1])}
                                         for i in sorted(used)}, "heads": heads}
        return {"deciles": DECILES, "rows_per_decile": TOP_ROWS, "top_tokens": TOP_TOKENS,
                "distance_bins": distance_bin_labels(), "kinds": kinds}
