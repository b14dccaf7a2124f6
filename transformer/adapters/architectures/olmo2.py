"""OLMo 2: no norm before its sublayers but one after each (on the sublayer's output, before it joins the stream),
and query and key RMS norms over the whole projection."""
from __future__ import annotations

from .llama import ARCHITECTURE as LLAMA
from .llama import llama_like
from .spec import Kind

ARCHITECTURE = llama_like("olmo2", kinds={"self": Kind("decoder", "self_attn", "self_attn.o_proj", None,
                                                       "post_attention_layernorm")},
                          mlp={"decoder": (None, "post_feedforward_layernorm")}, qkv=LLAMA.qkv)
