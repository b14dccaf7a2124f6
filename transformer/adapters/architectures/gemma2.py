"""Gemma 2: a norm before and after each sublayer, RMS norms that scale by (1 + w), an embedding scaled by
sqrt(d_model) (in the embedding's output), soft-capped scores (`attn_logit_softcapping`) and sliding windows on
alternate layers."""
from __future__ import annotations

from .llama import llama_like
from .spec import SOFTCAP, WINDOW, Kind

GEMMA_KINDS = {"self": Kind("decoder", "self_attn", "self_attn.o_proj", "input_layernorm", "post_attention_layernorm")}
GEMMA_MLP = {"decoder": ("pre_feedforward_layernorm", "post_feedforward_layernorm")}

ARCHITECTURE = llama_like("gemma2", kinds=GEMMA_KINDS, mlp=GEMMA_MLP, terms=frozenset({WINDOW, SOFTCAP}),
                          offset_norms=("Gemma2RMSNorm",))
