"""A score taken apart (QK attribution): for one head, query and key, the score the softmax saw is a sum over pairs
(query part, key part) of `scale * (W_Q^h N_q(p)) . (W_K^h N_k(p'))` plus the model's additive terms (mask, T5's
position bias) as named entries.

The parts are those of `residual_parts` (embeddings, positions, each earlier head and MLP, `bias`); N_q and N_k are
the norms on the way, frozen at this input; the q and k biases join the `bias` part; RoPE, linear at a fixed
position, rotates each part (Su et al. 2021). Elhage et al. 2021 split the QK circuit this way over the residual
stream's terms; the score is bilinear in the query's and the key's inputs, so the pairs add up to q.k exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..adapters import ResidualPathError
from ..model import Head
from .residual_parts import BIAS, Parts, PathCapture, frozen_norm, reading_parts

TOLERANCE = 1e-4  # |sum - score| <= TOLERANCE * max(1, |score|)


@dataclass(frozen=True)
class QKTable:
    """One score taken apart: `contributions` (Pq, Pk) over `query_parts` x `key_parts`, the additive `terms`,
    their sum `total` and the score the model computed (`score`: scale * q.k + terms, from the captured q and k)."""

    head: Head
    query: int  # 0-based position on the head's query axis
    key: int
    query_parts: tuple[str, ...]
    key_parts: tuple[str, ...]
    contributions: Tensor
    terms: dict[str, float]
    score: float

    @property
    def total(self) -> float:
        """Σ pairs + Σ terms."""
        return float(self.contributions.sum()) + sum(self.terms.values())

    def pairs(self) -> list[tuple[str, str, float]]:
        """(query part, key part, contribution), largest magnitude first."""
        flat = self.contributions.flatten()
        order = flat.abs().argsort(descending=True).tolist()
        n = len(self.key_parts)
        return [(self.query_parts[i // n], self.key_parts[i % n], float(flat[i])) for i in order]

    def by_query_part(self) -> dict[str, float]:
        """Each query part's share of the score (summed over key parts)."""
        return dict(zip(self.query_parts, self.contributions.sum(1).tolist(), strict=True))

    def by_key_part(self) -> dict[str, float]:
        """Each key part's share of the score (summed over query parts)."""
        return dict(zip(self.key_parts, self.contributions.sum(0).tolist(), strict=True))

    def as_dict(self) -> dict:
        """{"score", "pairs": [{"query_part", "key_part", "contribution"}], "terms": {name: value}}."""
        return {"score": self.score, "head": self.head.label, "query": self.query + 1, "key": self.key + 1,
                "pairs": [{"query_part": q, "key_part": k, "contribution": c} for q, k, c in self.pairs()],
                "terms": self.terms}


def _rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """RoPE as Llama, Qwen2 and ModernBERT apply it (halves rotated), to rows x (P, Dh) at one position."""
    half = x.shape[-1] // 2
    turned = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + turned * sin


def _project(parts: Parts, weight: Tensor, bias: Tensor | None, rows: slice) -> Tensor:
    out = parts.vectors[:, 0] @ weight[rows].detach().float().T  # (P, Dh)
    if bias is not None:
        out = out.clone()
        out[parts.names.index(BIAS)] += bias[rows].detach().float()
    return out


def _head_norm(norm: nn.Module | None, parts: Tensor) -> Tensor:
    """A per-head query or key norm (Qwen3's RMSNorm over the head's dimensions), frozen at the whole projection."""
    if norm is None:
        return parts
    out, _ = frozen_norm(norm, parts[:, None], parts.sum(0)[None])
    return out[:, 0]


def _check_head(cap: PathCapture, head: Head) -> None:
    inputs = cap.insides.inputs.get(head.kind)
    if inputs is None:
        kinds = ", ".join(cap.insides.inputs)
        raise ResidualPathError(f"{cap.model} has no {head.kind} attention (its kinds: {kinds})")
    if not 0 <= head.layer < len(inputs) or not 0 <= head.head < inputs[0].n_heads:
        raise ResidualPathError(f"{cap.model} has no head {head.label}: {head.kind} has layers 1-{len(inputs)} and "
                                f"heads 1-{inputs[0].n_heads}")


def qk_attribution(cap: PathCapture, head: Head, query: int, key: int) -> QKTable:
    """The score of `head` at (query, key) (0-based positions on its axes) taken apart into pairs of parts."""
    _check_head(cap, head)
    kind, layer, h = head
    inputs = cap.insides.inputs[kind][layer]
    n_q, n_k = inputs.queries.shape[2], inputs.keys.shape[2]
    for name, at, n in (("query", query, n_q), ("key", key, n_k)):
        if not 0 <= at < n:
            raise ResidualPathError(f"{name} position {at + 1} is outside {head.label}'s {n} {name} positions")
    proj = cap.path.projections[kind][layer]
    dh, g = inputs.queries.shape[-1], inputs.groups[h]
    q_parts = reading_parts(cap, kind, layer, [query])
    k_parts = reading_parts(cap, kind, layer, [key], keys=True)
    q = _head_norm(proj.q_norm, _project(q_parts, proj.wq, proj.bq, slice(h * dh, (h + 1) * dh)))
    k = _head_norm(proj.k_norm, _project(k_parts, proj.wk, proj.bk, slice(g * dh, (g + 1) * dh)))
    tables = cap.record.rotary.get((kind, layer))
    if tables is not None:
        cos, sin = (t.reshape(-1, *t.shape[-2:])[0].float() for t in tables)  # (T, Dh)
        q, k = _rotate(q, cos[query], sin[query]), _rotate(k, cos[key], sin[key])
    contributions = inputs.scale * q @ k.T
    terms = {}
    for name, t in inputs.terms.items():
        t = t.float()
        t = t.expand(*t.shape[:-2], n_q, n_k) if t.shape[-2:] != (n_q, n_k) else t
        while t.dim() > 3:
            t = t[0]
        terms[name] = float(t[min(h, t.shape[0] - 1), query, key] if t.dim() == 3 else t[query, key])
    dot = float(inputs.queries[0, h, query].float() @ inputs.keys[0, g, key].float())
    score = inputs.scale * dot + sum(terms.values())
    return QKTable(head, query, key, q_parts.names, k_parts.names, contributions, terms, score)
