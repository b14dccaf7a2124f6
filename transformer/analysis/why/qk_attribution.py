"""A score taken apart (QK attribution): for one head, query and key, the score the softmax saw is a sum over pairs
(query part, key part) of `scale * (W_Q^h N_q(p)) . (W_K^h N_k(p'))` plus the model's additive terms (mask, T5's
position bias) as named entries.

The parts are those of `residual_parts` (embeddings, positions, each earlier head and MLP, `bias`); N_q and N_k are
the norms on the way, frozen at this input; the q and k biases join the `bias` part; RoPE, linear at a fixed
position, rotates each part (Su et al. 2021). Elhage et al. 2021 split the QK circuit this way over the residual
stream's terms; the score is bilinear in the query's and the key's inputs, so the pairs add up to q.k exactly.
A model that soft-caps its scores (Gemma 2: cap * tanh(s / cap)) is explained before the cap, the cap a named
transform beside the table; a sliding window acts through the mask term; gpt-oss's sink logit is named beside the
table (it joins the softmax's normaliser, not the score).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ...adapters import ResidualPathError
from ...model import Head
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
    soft_cap: float | None = None  # Gemma 2: the softmax reads cap * tanh(s / cap) + terms, s = scale * q.k
    sink: float | None = None  # gpt-oss: the head's sink logit, beside the keys in the softmax's normaliser
    window: int | None = None  # a sliding window: keys |i - j| >= window are hidden by the mask
    rotated: bool = False  # RoPE rotated every part (False: a model without it, or a global layer without positions)
    query_factor: float | None = None  # log-n scaling: the query (every part of it) was multiplied by this

    @property
    def total(self) -> float:
        """Σ pairs + Σ terms."""
        return float(self.contributions.sum()) + sum(self.terms.values())

    @property
    def softmax_input(self) -> float:
        """What the softmax reads at this cell: `score`, or with a soft-cap cap * tanh((score - terms) / cap) + terms
        (the terms, the mask, are added after the cap)."""
        if self.soft_cap is None:
            return self.score
        terms = sum(self.terms.values())
        return self.soft_cap * math.tanh((self.score - terms) / self.soft_cap) + terms

    def rules_line(self) -> str:
        """One line on what lies between the score and the weights beyond the terms ("" for none): the soft-cap,
        the sink, the window."""
        said = []
        if self.soft_cap is not None:
            said.append(f"soft-capped: the table explains the score before the cap, {self.score:+.4f}; the softmax "
                        f"reads {self.soft_cap:g}·tanh(s/{self.soft_cap:g}) = {self.softmax_input:+.4f}")
        if self.sink is not None:
            said.append(f"the head's sink logit {self.sink:+.4f} competes with the keys in the softmax (not a part "
                        "of this score)")
        if self.window is not None:
            said.append(f"sliding window of {self.window}: keys {self.window} or more positions away are masked")
        if self.query_factor is not None:
            said.append(f"log-n scaling: every query part is multiplied by {self.query_factor:.4f} (ln n / ln L, this "
                        "query seeing n keys past L), as the model scales the query")
        return "; ".join(said)

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
        out = {"score": self.score, "head": self.head.label, "query": self.query + 1, "key": self.key + 1,
               "pairs": [{"query_part": q, "key_part": k, "contribution": c} for q, k, c in self.pairs()],
               "terms": self.terms}
        if self.soft_cap is not None:
            out.update(soft_cap={"cap": self.soft_cap, "transform": "cap * tanh(s / cap)", "before": "terms"},
                       pre_cap_score=self.score, softmax_input=self.softmax_input)
        if self.sink is not None:
            out["sink"] = self.sink
        if self.window is not None:
            out["sliding_window"] = self.window
        if self.query_factor is not None:
            out["query_factor"] = self.query_factor
        return out


def _rotate(x: Tensor, cos: Tensor, sin: Tensor, half_tables: bool = False) -> Tensor:
    """RoPE as Llama, Qwen2 and ModernBERT apply it (halves rotated), to rows x (P, Dh) at one position: on the
    table's width of each head (GPT-NeoX and Phi-3 rotate a share, the rest passes); `half_tables`: the table gives
    each half's angle once (gpt-oss)."""
    if half_tables:
        cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    width = cos.shape[-1]
    rot, rest = x[..., :width], x[..., width:]
    half = width // 2
    turned = torch.cat([-rot[..., half:], rot[..., :half]], -1)
    return torch.cat([rot * cos + turned * sin, rest], -1)


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


def _projected(parts: Parts, weight: Tensor, bias: Tensor | None, norm: nn.Module | None, rows: slice) -> Tensor:
    """The parts through W (one head's `rows`) and the query or key norm: per head (Qwen3, Gemma 3), or over every
    head's projection at once (OLMo 2: frozen at the whole projection, then the head's rows)."""
    size = getattr(getattr(norm, "weight", None), "shape", (rows.stop - rows.start,))[0]
    if norm is None or size == rows.stop - rows.start:
        return _head_norm(norm, _project(parts, weight, bias, rows))
    every = _project(parts, weight, bias, slice(None))
    out, _ = frozen_norm(norm, every[:, None], every.sum(0)[None])
    return out[:, 0, rows]


def _check_head(cap: PathCapture, head: Head) -> None:
    inputs = cap.insides.inputs.get(head.kind)
    if inputs is None:
        kinds = ", ".join(cap.insides.inputs)
        raise ResidualPathError(f"{cap.model} has no {head.kind} attention (its kinds: {kinds})")
    if not 0 <= head.layer < len(inputs) or not 0 <= head.head < inputs[0].n_heads:
        raise ResidualPathError(f"{cap.model} has no head {head.label}: {head.kind} has layers 1-{len(inputs)} and "
                                f"heads 1-{inputs[0].n_heads}")


def qk_attribution(cap: PathCapture, head: Head, query: int, key: int, parts: tuple[Parts, Parts] | None = None
                   ) -> QKTable:
    """The score of `head` at (query, key) (0-based positions on its axes) taken apart into pairs of parts: the
    residual parts, or `parts` (what the query and the key read, as `reading_parts` gives them)."""
    _check_head(cap, head)
    kind, layer, h = head
    inputs = cap.insides.inputs[kind][layer]
    n_q, n_k = inputs.queries.shape[2], inputs.keys.shape[2]
    for name, at, n in (("query", query, n_q), ("key", key, n_k)):
        if not 0 <= at < n:
            raise ResidualPathError(f"{name} position {at + 1} is outside {head.label}'s {n} {name} positions")
    proj = cap.path.projections[kind][layer]
    dh, g = inputs.queries.shape[-1], inputs.groups[h]
    if parts is None:
        parts = reading_parts(cap, kind, layer, [query]), reading_parts(cap, kind, layer, [key], keys=True)
    q_parts, k_parts = parts
    q = _projected(q_parts, proj.wq, proj.bq, proj.q_norm, slice(h * dh, (h + 1) * dh))
    k = _projected(k_parts, proj.wk, proj.bk, proj.k_norm, slice(g * dh, (g + 1) * dh))
    tables = cap.record.rotary.get((kind, layer))
    if tables is not None:
        cos, sin = (t.reshape(-1, *t.shape[-2:])[0].float() for t in tables)  # (T, rotary width)
        halves = cap.path.half_tables
        q, k = _rotate(q, cos[query], sin[query], halves), _rotate(k, cos[key], sin[key], halves)
    scales = cap.record.query_scales.get((kind, layer))
    factor = None if scales is None else float(scales.reshape(scales.shape[0], -1)[0, query])
    if factor is not None:  # log-n scaling: the query times its factor (ours, past `logn_length`)
        q = q * factor
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
    rules = inputs.rules
    sink = None if rules is None or rules.sinks is None else float(rules.sinks[h])
    return QKTable(head, query, key, q_parts.names, k_parts.names, contributions, terms, score,
                   None if rules is None else rules.softcap, sink, None if rules is None else rules.window,
                   tables is not None, factor if factor is not None and factor != 1.0 else None)
