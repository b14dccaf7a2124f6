"""The attention store of one input from a model's captured insides (eager attention: short inputs), for every
family: the rules the capture read (scale, windows, T5's table) completed with what the kind and the input say
(causal, padding), then checked against the dense mask and bias the model really added, so a model whose terms the
rules do not reproduce is refused in one line, never shown wrong."""
from __future__ import annotations

from dataclasses import replace

import torch
from torch import Tensor

from ..model import (
                     AttentionInputs,
                     AttentionStore,
                     Insides,
                     LayerStore,
                     ScoreRules,
                     StoreError,
                     layer_store,
                     value_norms,
)
from .interface import InspectableModel

MASKED_BELOW = -1e30  # an additive mask entry below this hides its key (ours: -inf; Hugging Face: the dtype's min)


def _captured_visible(inputs: AttentionInputs) -> Tensor | None:
    """(Tq, Tk) bool of what the model's own mask lets each query see (batch row 0), None without a mask."""
    mask = inputs.terms.get("mask")
    if mask is None:
        return None
    tq, tk = inputs.queries.shape[2], inputs.keys.shape[2]
    return (mask[0].float() > MASKED_BELOW).all(0).expand(tq, tk) if mask.dim() == 4 else \
        (mask.float() > MASKED_BELOW).expand(tq, tk)


def rules_of(inputs: AttentionInputs, causal: bool) -> ScoreRules:
    """The layer's rules: what the capture read, the causal rule of the kind, padding keys from the mask."""
    rules = inputs.rules or ScoreRules(inputs.scale)
    tq, tk = inputs.queries.shape[2], inputs.keys.shape[2]
    rules = replace(rules, scale=inputs.scale, causal=causal, offset=tk - tq if causal else 0)
    seen = _captured_visible(inputs)
    if seen is not None:
        keep = seen.any(0)
        if not bool(keep.all()):
            rules = replace(rules, keep=keep)
    return rules


def check_rules(inputs: AttentionInputs, rules: ScoreRules, where: str) -> None:
    """StoreError unless the rules hide exactly the keys the model's mask hides and give T5's bias as the model
    added it."""
    tq, tk = inputs.queries.shape[2], inputs.keys.shape[2]
    rows, keys = torch.arange(tq), torch.arange(tk)
    seen = _captured_visible(inputs)
    ruled = rules.visible(rows + rules.offset, keys)
    if seen is not None or ruled is not None:
        ones = torch.ones(tq, tk, dtype=torch.bool)
        if not torch.equal(ones if seen is None else seen, ones if ruled is None else ruled):
            raise StoreError(f"{where}: the model's attention mask is not one the store's rules (causal, window, "
                             "padding) reproduce, so its attention is not stored")
    bias = inputs.terms.get("position_bias")
    if bias is None and rules.relative is None:
        return
    heads = torch.arange(inputs.queries.shape[1])
    ruled_bias = (torch.zeros(len(heads), tq, tk) if rules.relative is None
                  else rules.relative.bias(heads, rows + rules.offset, keys))
    captured = torch.zeros_like(ruled_bias) if bias is None else bias[0].float().expand_as(ruled_bias)
    if not torch.allclose(captured, ruled_bias, atol=1e-6, rtol=0):
        raise StoreError(f"{where}: the model's position bias is not one the store's rules reproduce, so its "
                         "attention is not stored")


def layer_of(inputs: AttentionInputs, causal: bool, where: str, projection: Tensor | None = None) -> LayerStore:
    """One captured layer (batch row 0) as a layer store, its rules checked against the captured terms."""
    one = inputs.select(0)
    rules = rules_of(one, causal)
    check_rules(one, rules, where)
    norms = None if projection is None else value_norms(one.values[0], one.groups, projection)
    return layer_store(one.queries[0], one.keys[0], rules, one.groups, norms)


def store_of_insides(adapter: InspectableModel, insides: Insides) -> AttentionStore:
    """The attention store of the first sequence of `insides`, every kind and layer."""
    layers = {}
    for kind, captured in insides.inputs.items():
        layers[kind] = tuple(layer_of(inputs, adapter.family.causal(kind), f"{adapter.name} {kind} layer {i}",
                                      adapter.output_projection(kind, i)[0].detach())
                             for i, inputs in enumerate(captured))
    return AttentionStore(layers)


def attention_store(adapter: InspectableModel, src: Tensor, tgt: Tensor) -> AttentionStore:
    """The store of one teacher-forced input (`insides`' arguments): eager attention, so for short inputs."""
    with torch.no_grad():
        return store_of_insides(adapter, adapter.insides(src, tgt))
