"""Inside one head: every stage of the computation of one attention head for one query, with the model's own numbers
(from `InspectableModel.insides`), and what each key contributes to the head's output.

For query i and key j of head h (Vaswani et al. 2017, eq. 1, with the model's additive terms):
    s_ij = scale * (q_i . k_j) + sum(terms_ij),    alpha_ij = softmax_j(s_ij),
    z_i = sum_j alpha_ij v_j,                       share_i = W_O^h z_i   (W_O^h: head h's columns of W_O),
and the contribution of key j is ||alpha_ij W_O^h v_j|| = alpha_ij ||u_j||, u_j = W_O^h v_j = W_O^h (W_V x_j + b_V)
(Kobayashi et al. 2020, "Attention is not only a weight"). The per-key vectors alpha_ij u_j add up to share_i.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ...adapters import InspectableModel
from ...model import AttentionInputs, Insides


class HeadSelectionError(ValueError):
    """A kind, layer, head or query the model (or this input) does not have; the message says what it has."""


@dataclass(frozen=True)
class HeadComputation:
    """One head's computation for one query, every stage as the model computed it (batch item 0).

    Vectors are float32; `keys`, `values` and the per-key rows have one row per key (Tk). `kv_head` is the key/value
    head this query head reads (grouped-query attention: several query heads share it)."""

    model: str
    kind: str
    layer: int
    head: int
    query: int
    kv_head: int
    n_heads: int
    n_kv_heads: int
    query_vector: Tensor  # (Dh,) after any rotation
    keys: Tensor  # (Tk, Dh) after any rotation
    products: Tensor  # (Tk, Dh) q ⊙ k_j
    dots: Tensor  # (Tk,) q . k_j
    scale: float  # multiplies q . k (1 / sqrt(Dh); 1 for T5)
    terms: dict[str, Tensor]  # name -> (Tk,) additive terms (mask, position_bias)
    scores: Tensor  # (Tk,) scale * dots + terms
    weights: Tensor  # (Tk,) softmax(scores)
    values: Tensor  # (Tk, Dv)
    weighted_values: Tensor  # (Tk, Dv) alpha_j v_j
    head_output: Tensor  # (Dv,) sum_j alpha_j v_j, recomputed from the stages above
    model_head_output: Tensor | None  # (Dv,) the head's output as the model fed it to W_O (None: not captured)
    share: Tensor  # (D,) W_O^h z: the head's share of the attention output, before the output bias
    value_norms: Tensor  # (Tk,) ||W_O^h v_j||
    contributions: Tensor  # (Tk,) alpha_j ||W_O^h v_j||
    query_unrotated: Tensor | None = None  # (Dh,) RoPE models: before rotation
    keys_unrotated: Tensor | None = None  # (Tk, Dh)

    @property
    def n_keys(self) -> int:
        return int(self.weights.shape[0])


def check_selection(insides: Insides, kind: str, layer: int, head: int, query: int | None = None) -> AttentionInputs:
    """The layer's inputs if the model has this kind, layer, head (and query position); else HeadSelectionError."""
    if kind not in insides.inputs:
        raise HeadSelectionError(f"no attention kind {kind!r} in this model; it has {', '.join(insides.inputs)}")
    layers = insides.inputs[kind]
    if not 0 <= layer < len(layers):
        raise HeadSelectionError(f"no layer {layer} in {kind}: the model has layers 0-{len(layers) - 1}")
    inputs = layers[layer]
    if not 0 <= head < inputs.n_heads:
        raise HeadSelectionError(f"no head {head} in {kind} layer {layer}: it has heads 0-{inputs.n_heads - 1}")
    n_queries = inputs.queries.shape[2]
    if query is not None and not 0 <= query < n_queries:
        raise HeadSelectionError(f"no query position {query} in {kind}: this input has positions 0-{n_queries - 1}")
    return inputs


def head_slice(weight: Tensor, head: int, n_heads: int) -> Tensor:
    """Head h's columns of an output projection's weight (D, H * Dv): W_O^h, (D, Dv)."""
    width = weight.shape[1] // n_heads
    return weight[:, head * width:(head + 1) * width]


def head_computation(adapter: InspectableModel, insides: Insides, kind: str, layer: int, head: int, query: int
                     ) -> HeadComputation:
    """Every stage of head `head` of `kind` layer `layer` for query position `query` (0-based, batch item 0)."""
    inputs = check_selection(insides, kind, layer, head, query).select(0)
    weight, _ = adapter.output_projection(kind, layer)
    w_o = head_slice(weight.detach().float(), head, inputs.n_heads)  # (D, Dv)
    kv = inputs.groups[head]
    q = inputs.queries[0, head, query].float()  # (Dh,)
    keys = inputs.keys[0, kv].float()  # (Tk, Dh)
    values = inputs.values[0, kv].float()  # (Tk, Dv)
    dots = keys @ q  # (Tk,)
    terms = {name: _row(t, head, query, keys.shape[0]) for name, t in inputs.terms.items()}
    scores = inputs.capped(dots * inputs.scale)
    for term in terms.values():
        scores = scores + term
    weights = inputs.normalised(scores, head)
    weighted = weights[:, None] * values  # (Tk, Dv)
    z = weighted.sum(0)  # (Dv,)
    model_z = inputs.model_head_outputs()
    u_norms = (values @ w_o.T).norm(dim=-1)  # (Tk,) ||W_O^h v_j||
    unrotated = inputs.unrotated
    return HeadComputation(
        model=adapter.name, kind=kind, layer=layer, head=head, query=query, kv_head=kv, n_heads=inputs.n_heads,
        n_kv_heads=inputs.keys.shape[1], query_vector=q, keys=keys, products=keys * q, dots=dots,
        scale=inputs.scale, terms=terms, scores=scores, weights=weights, values=values, weighted_values=weighted,
        head_output=z, model_head_output=None if model_z is None else model_z[0, head, query].float(),
        share=w_o @ z, value_norms=u_norms, contributions=weights * u_norms,
        query_unrotated=None if unrotated is None else unrotated[0][0, head, query].float(),
        keys_unrotated=None if unrotated is None else unrotated[1][0, kv].float())


def _row(term: Tensor, head: int, query: int, n_keys: int) -> Tensor:
    """One (head, query) row of an additive term broadcastable to (1, H, Tq, Tk), as (Tk,)."""
    t = term[0] if term.dim() == 4 else term  # (H|1, Tq|1, Tk) or (Tq|1, Tk)
    if t.dim() == 3:
        t = t[head if t.shape[0] > 1 else 0]
    return t[query if t.shape[0] > 1 else 0].float().expand(n_keys)


def key_vectors(adapter: InspectableModel, insides: Insides, kind: str, layer: int, head: int, query: int) -> Tensor:
    """The per-key vectors alpha_j W_O^h v_j of one head and query, (Tk, D): they add up to the head's share."""
    c = head_computation(adapter, insides, kind, layer, head, query)
    w_o = head_slice(adapter.output_projection(kind, layer)[0].detach().float(), head, c.n_heads)
    return c.weighted_values @ w_o.T


def _per_key_vectors(inputs: AttentionInputs, weight: Tensor) -> Tensor:
    """u = W_O^h v_j for every head and key, (B, H, Tk, D): one d_model vector per (head, key), never per query."""
    values = inputs.head_values().float()  # (B, H, Tk, Dv)
    w = weight.detach().float().view(weight.shape[0], inputs.n_heads, -1)  # (D, H, Dv)
    return torch.einsum("bhkv,dhv->bhkd", values, w)  # (B, H, Tk, D)


def contribution_maps(inputs: AttentionInputs, weight: Tensor) -> Tensor:
    """||alpha_ij W_O^h v_j|| for every head, query and key, (B, H, Tq, Tk): the weights times each key's ||u_j||."""
    values = inputs.head_values().float()  # (B, H, Tk, Dv)
    w = weight.detach().float().view(weight.shape[0], inputs.n_heads, -1).transpose(0, 1)  # (H, D, Dv)
    gram = w.transpose(1, 2) @ w  # (H, Dv, Dv): ||W_O^h v||^2 = v' G_h v
    norms = ((values @ gram) * values).sum(-1).clamp_min(0).sqrt()  # (B, H, Tk)
    return inputs.pattern() * norms.unsqueeze(-2)


def head_contribution_map(inputs: AttentionInputs, weight: Tensor, head: int) -> Tensor:
    """`contribution_maps` of one head, (B, Tq, Tk): its keys' ||W_O^h v_j|| alone (no other head's weights read)."""
    values = inputs.values[:, inputs.groups[head]].float()  # (B, Tk, Dv)
    w_o = head_slice(weight.detach().float(), head, inputs.n_heads)  # (D, Dv)
    norms = (values @ w_o.T).norm(dim=-1)  # (B, Tk)
    kv = inputs.groups[head]
    scores = inputs.capped((inputs.queries[:, head].float() @ inputs.keys[:, kv].float().transpose(-2, -1))
                           * inputs.scale)
    for term in inputs.terms.values():  # broadcastable to (B, H, Tq, Tk): this head's slice
        t = term.float()
        scores = scores + (t[:, head if t.shape[1] > 1 else 0] if t.dim() == 4 else t)
    return inputs.normalised(scores, head) * norms.unsqueeze(-2)  # (B, Tq, Tk)


def mean_contribution_map(inputs: AttentionInputs, weight: Tensor) -> Tensor:
    """||(1/H) sum_h alpha_hij W_O^h v_hj|| for every query and key, (B, Tq, Tk), through each key's Gram matrix of
    the heads' u vectors (H x H per key), never a d_model vector per (query, key)."""
    u = _per_key_vectors(inputs, weight)  # (B, H, Tk, D)
    gram = u.transpose(1, 2) @ u.permute(0, 2, 3, 1)  # (B, Tk, H, H)
    alpha = inputs.pattern()  # (B, H, Tq, Tk)
    # (B, H, Tq, Tk): sum_h' G_j[h, h'] alpha_h'; contiguous first (a strided batched matmul was 100x slower)
    mixed = (alpha.permute(0, 3, 2, 1).contiguous() @ gram).permute(0, 3, 2, 1)
    # G is symmetric, so (alpha' G)_h = (G alpha)_h
    return (mixed * alpha).sum(1).clamp_min(0).sqrt() / inputs.n_heads
