"""GPT-NeoX (Pythia): `gpt_neox.layers`, pre-norm LayerNorms, `query_key_value` laid out per head (q, k, v of head
1, then of head 2, ...), attention and MLP reading the same stream where the config says so (parallel residual),
RoPE on the rotary share of each head's dimensions."""
from __future__ import annotations

from .spec import GROUPED, ROTARY, ROTATE_HALF, Architecture, Kind, Qkv, Stack

ARCHITECTURE = Architecture(
    model_type="gpt_neox", family="decoder-only",
    stacks={"decoder": Stack("layers", final_norm="final_layer_norm")},
    kinds={"self": Kind("decoder", "attention", "attention.dense", "input_layernorm")},
    mlp={"decoder": ("post_attention_layernorm", None)},
    pre_norm=True, qkv=Qkv(GROUPED, ("query_key_value",)), positions=ROTARY, rope=ROTATE_HALF,
    parallel=lambda config: bool(config.use_parallel_residual))
