"""Typed records of a model's insides, captured per call and returned, never kept on the model: each attention
layer's queries, keys, values and additive score terms as its softmax saw them, and the residual stream.

One naming scheme for every captured tensor (TransformerLens's hook points are the example): `"{kind}.{layer}.q"`,
`".k"`, `".v"`, `".scores"`, `".pattern"` for attention, `"{stack}.{i}.resid"` for the residual stream (i = 0 the
embeddings fed to the first layer, i = n after layer n). `Insides.point(name)` reads one.

The score of query i and key j in head h is `scale * (q_i . k_j) + sum(terms)` and the weights are its softmax
("Attention Is All You Need", eq. 1, with the additive masks and biases the model adds; T5 uses no scale).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from .attention_store import ScoreRules
from .outputs import AttentionMaps


@dataclass(frozen=True)
class AttentionInputs:
    """What one attention layer's softmax saw, every head at once.

    `keys` and `values` have one head per key/value group (grouped-query attention: fewer than the query heads);
    `groups[h]` is the key/value head that query head h reads. `terms` are the additive score terms by name
    ("mask": padding and causal masks as the model adds them, "position_bias": T5's relative position bias), each
    broadcastable to (B, H, Tq, Tk).
    """

    queries: Tensor  # (B, H, Tq, Dh), after any rotation (RoPE)
    keys: Tensor  # (B, Hkv, Tk, Dh), after any rotation
    values: Tensor  # (B, Hkv, Tk, Dv)
    scale: float  # multiplies q . k (1 / sqrt(Dh); 1 for T5)
    terms: dict[str, Tensor] = field(default_factory=dict)
    groups: tuple[int, ...] = ()  # key/value head of each query head; () means head h reads head h
    merged: Tensor | None = None  # (B, Tq, H * Dv): the output projection's input as the model fed it (head mask in)
    output: Tensor | None = None  # (B, Tq, D): the output projection's output, its bias included
    unrotated: tuple[Tensor, Tensor] | None = None  # RoPE only: queries (B, H, Tq, Dh), keys (B, Hkv, Tk, Dh) before
    rules: ScoreRules | None = None  # what the capture read of the score rules (window, T5's table); the store's start

    def __post_init__(self) -> None:
        b, h, _, d = self.queries.shape
        if self.keys.shape[0] != b or self.keys.shape[-1] != d or self.values.shape[:3] != self.keys.shape[:3]:
            raise ValueError(f"queries {tuple(self.queries.shape)}, keys {tuple(self.keys.shape)} and values "
                             f"{tuple(self.values.shape)} do not fit together")
        if not self.groups:
            if self.keys.shape[1] != h:
                raise ValueError(f"{h} query heads and {self.keys.shape[1]} key heads need their groups")
            object.__setattr__(self, "groups", tuple(range(h)))
        if len(self.groups) != h or max(self.groups) >= self.keys.shape[1]:
            raise ValueError(f"groups {self.groups} do not map {h} query heads onto {self.keys.shape[1]} key heads")

    @property
    def n_heads(self) -> int:
        return self.queries.shape[1]

    def _per_head(self, t: Tensor) -> Tensor:
        every = t.shape[1] == self.n_heads and self.groups == tuple(range(self.n_heads))
        return t if every else t[:, list(self.groups)]

    def head_keys(self) -> Tensor:
        """Keys as each query head reads them, (B, H, Tk, Dh)."""
        return self._per_head(self.keys)

    def head_values(self) -> Tensor:
        """Values as each query head reads them, (B, H, Tk, Dv)."""
        return self._per_head(self.values)

    def dot_products(self) -> Tensor:
        """q . k for every head, query and key, before scale and terms; (B, H, Tq, Tk), float32."""
        return self.queries.float() @ self.head_keys().float().transpose(-2, -1)

    def capped(self, scaled: Tensor) -> Tensor:
        """Scaled dot products through the model's soft-cap, cap * tanh(s / cap) (Gemma 2), before any term."""
        cap = None if self.rules is None else self.rules.softcap
        return scaled if cap is None else torch.tanh(scaled / cap) * cap

    def scores(self) -> Tensor:
        """The softmax's input: scale * q . k (soft-capped where the model caps it) + every term; (B, H, Tq, Tk),
        float32."""
        scores = self.capped(self.dot_products() * self.scale)
        for term in self.terms.values():
            scores = scores + term.float()
        return scores

    def normalised(self, scores: Tensor, head: int | None = None) -> Tensor:
        """softmax over the last axis of `scores` (every head, (B, H, ..., Tk), or one `head`'s), with the model's
        sink logit in the normaliser where it has one (gpt-oss: the sink takes weight, the keys' sum below 1)."""
        sinks = None if self.rules is None else self.rules.sinks
        if sinks is None:
            return scores.softmax(-1)
        sink = sinks.float()[head] if head is not None else sinks.float().view(-1, *[1] * (scores.dim() - 3))
        sink = sink.expand(*scores.shape[:-1]).unsqueeze(-1)
        return torch.cat([scores, sink], -1).softmax(-1)[..., :-1]

    def pattern(self) -> Tensor:
        """softmax(scores) (a sink in the normaliser): the attention weights, recomputed from the captured inputs;
        (B, H, Tq, Tk)."""
        return self.normalised(self.scores())

    def head_outputs(self) -> Tensor:
        """Each head's output before the output projection: weights @ values; (B, H, Tq, Dv)."""
        return self.pattern() @ self.head_values().float()

    def select(self, index: int) -> "AttentionInputs":
        """One sequence of the batch (B = 1), terms included."""
        pick = slice(index, index + 1)
        return AttentionInputs(self.queries[pick], self.keys[pick], self.values[pick], self.scale,
                               {k: (t[pick] if t.dim() == 4 and t.shape[0] > 1 else t) for k, t in self.terms.items()},
                               self.groups,
                               None if self.merged is None else self.merged[pick],
                               None if self.output is None else self.output[pick],
                               None if self.unrotated is None else (self.unrotated[0][pick], self.unrotated[1][pick]),
                               self.rules)

    def model_head_outputs(self) -> Tensor | None:
        """Each head's output as the model computed it (its slice of `merged`), (B, H, Tq, Dv); None if not captured."""
        if self.merged is None:
            return None
        b, t, _ = self.merged.shape
        return self.merged.view(b, t, self.n_heads, -1).transpose(1, 2)


@dataclass(frozen=True)
class Insides:
    """One teacher-forced forward's insides: logits (B, T, V), the attention maps, every attention layer's inputs
    per kind (`inputs[kind][layer]`), and the residual stream per stack (`residual[stack][i]`, (B, T, D); i = 0 the
    embeddings, i = n after layer n, before any final norm)."""

    logits: Tensor
    attentions: AttentionMaps
    inputs: dict[str, tuple[AttentionInputs, ...]]
    residual: dict[str, tuple[Tensor, ...]]

    def point(self, name: str) -> Tensor:
        """One captured tensor by its name: "cross.2.q", "decoder_self.0.pattern", "decoder.3.resid"."""
        try:
            where, index, what = name.rsplit(".", 2)
            i = int(index)
            if what == "resid":
                return self.residual[where][i]
            layer = self.inputs[where][i]
        except (ValueError, KeyError, IndexError):
            raise KeyError(f"no captured point {name!r}; kinds {tuple(self.inputs)}, stacks {tuple(self.residual)}"
                           ) from None
        found = {"q": lambda: layer.queries, "k": lambda: layer.keys, "v": lambda: layer.values,
                 "scores": layer.scores, "pattern": layer.pattern, "z": layer.head_outputs}.get(what)
        if found is None:
            raise KeyError(f"no captured point {name!r}: the last part is one of q, k, v, scores, pattern, z, resid")
        return found()

    def nbytes(self) -> int:
        """Memory the captured tensors hold (what the docs bound)."""
        tensors = [self.logits, *(t for ts in self.residual.values() for t in ts)]
        for layers in self.inputs.values():
            for a in layers:
                tensors += [a.queries, a.keys, a.values, *a.terms.values(), *(a.unrotated or ())]
                tensors += [t for t in (a.merged, a.output) if t is not None]
        return sum(t.numel() * t.element_size() for t in {id(t): t for t in tensors}.values())


def additive_mask(mask: Tensor | None, is_causal: bool, n_queries: int, n_keys: int, like: Tensor
                  ) -> Tensor | None:
    """A boolean mask (True: may attend) and/or the causal rule as one additive 0 / -inf term, (.., Tq, Tk)."""
    term = None
    if mask is not None:
        term = torch.zeros(mask.shape, dtype=torch.float32, device=like.device).masked_fill_(~mask, float("-inf"))
    if is_causal:
        causal = torch.full((n_queries, n_keys), float("-inf"), device=like.device).triu_(n_keys - n_queries + 1)
        term = causal if term is None else term + causal
    return term
