"""Falcon computes its attention in its own code, not through a shared eager kernel: its queries and keys are read
with a forward hook that redoes the module's own steps (the fused projection, its head split, the rotation with the
tables the model handed it) and takes the keys and values of every position from the cache the call updated. A
Falcon with ALiBi (`alibi: true`) builds its bias in bfloat16 and adds it twice (to the scores and into the mask):
no rule reproduces that exactly, so it is refused by name."""
from __future__ import annotations

import sys
from typing import Any

import torch
from torch import nn

from ..model import AttentionInputs, ScoreRules
from .hf_load import HFModelError


def own_attention(module: nn.Module) -> bool:
    """Whether `module` is a Falcon attention (its modeling module has no shared eager kernel)."""
    modeling = sys.modules[type(module).__module__]
    return not hasattr(modeling, "eager_attention_forward") and hasattr(module, "query_key_value") \
        and hasattr(module, "_split_heads")


def falcon_inputs(module: Any, args: tuple, kwargs: dict) -> AttentionInputs:
    """What a Falcon attention's softmax saw in the call that just ran (a forward hook's arguments)."""
    if kwargs.get("alibi") is not None:
        raise HFModelError(f"{type(module).__name__} uses ALiBi, which Falcon builds in bfloat16 and adds twice: "
                           "the studio does not reproduce it exactly, so its insides are not shown")
    modeling: Any = sys.modules[type(module).__module__]
    hidden = args[0] if args else kwargs["hidden_states"]
    b, t = hidden.shape[:2]
    h, d = module.num_heads, module.head_dim
    with torch.no_grad():
        q, k, v = module._split_heads(module.query_key_value(hidden))
        seen = h if module.new_decoder_architecture else module.num_kv_heads  # new layout: keys copied per head
        q = q.transpose(1, 2).reshape(b, h, t, d)
        k, v = (x.transpose(1, 2).reshape(b, seen, t, d) for x in (k, v))
        cos, sin = kwargs["position_embeddings"]
        q, k = modeling.apply_rotary_pos_emb(q, k, cos, sin)
    cache = kwargs.get("layer_past")
    if cache is not None:  # updated by the call: every position's keys and values
        k, v = cache.layers[module.layer_idx].keys, cache.layers[module.layer_idx].values
    n_kv = module.num_kv_heads
    if k.shape[1] > n_kv:  # one key per key/value group, as the model computed it
        k, v = k[:, :: k.shape[1] // n_kv], v[:, :: v.shape[1] // n_kv]
    per_group = h // k.shape[1]
    terms = {}
    mask = kwargs.get("attention_mask")
    if mask is not None:
        mask = mask[..., : k.shape[-2]]
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=q.dtype).masked_fill_(~mask, torch.finfo(q.dtype).min)
        terms["mask"] = mask.detach()
    scale = float(module.inv_norm_factor)
    return AttentionInputs(q.detach(), k.detach(), v.detach(), scale, terms,
                           tuple(i // per_group for i in range(h)), rules=ScoreRules(scale))


def falcon_hook(record: Any) -> Any:
    """A forward hook (with kwargs) that hands `record(module, inputs)` each call's `falcon_inputs`, with its output
    projection's input and output (`dense` runs inside the module, before the hook)."""
    def hook(module: nn.Module, args: tuple, kwargs: dict, out: Any) -> None:
        record(module, falcon_inputs(module, args, kwargs))
    return hook


def check_falcon(module: Any) -> None:
    """Refuses an ALiBi Falcon before anything runs."""
    if getattr(getattr(module, "config", None), "alibi", False):
        falcon_inputs(module, (), {"alibi": True})
