"""Llama: `model.layers`, pre-norm RMS norms (`input_layernorm`, `post_attention_layernorm`, final `norm`), separate
q, k, v projections (grouped-query attention), RoPE on each head (its first half paired with its second)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from .spec import ROTARY, ROTATE_HALF, SEPARATE, Architecture, Kind, Qkv, Stack

ARCHITECTURE = Architecture(
    model_type="llama", family="decoder-only",
    stacks={"decoder": Stack("layers", final_norm="norm")},
    kinds={"self": Kind("decoder", "self_attn", "self_attn.o_proj", "input_layernorm")},
    mlp={"decoder": ("post_attention_layernorm", None)},
    pre_norm=True, qkv=Qkv(SEPARATE, ("q_proj", "k_proj", "v_proj"), ("q_norm", "k_norm")), positions=ROTARY,
    rope=ROTATE_HALF)


def llama_like(model_type: str, **changes: Any) -> Architecture:
    """Llama's declaration for another model type, with `changes` (its score terms, its norms...)."""
    return replace(ARCHITECTURE, model_type=model_type, **changes)
