"""T5: an encoder-decoder of `block`s whose sublayers are `layer[i]` (self-attention, the decoder's cross-attention,
the MLP), each with its RMS norm before it; no position table: a learned bias per relative-distance bucket, held by
each stack's first layer and added to every layer's scores."""
from __future__ import annotations

from typing import Any

from ...model import RelativeBias
from .spec import RELATIVE, RELATIVE_BUCKETS, SEPARATE, Architecture, Kind, Qkv, Stack


def relative_bias(module: Any) -> RelativeBias | None:
    """The bucketed bias table an attention holds (each stack's first layer; bidirectional in the encoder), else
    None (later layers are handed the first layer's bias tensor)."""
    if not getattr(module, "has_relative_attention_bias", False):
        return None
    return RelativeBias(module.relative_attention_bias.weight.detach(), not module.is_decoder,
                        int(module.relative_attention_max_distance))


def t5_like(model_type: str) -> Architecture:
    """The T5 layout (T5, mT5)."""
    return Architecture(
        model_type=model_type, family="encoder-decoder",
        stacks={side: Stack(f"{side}.block", final_norm=f"{side}.final_layer_norm", tokens=f"{side}.embed_tokens")
                for side in ("encoder", "decoder")},
        kinds={"encoder_self": Kind("encoder", "layer.0.SelfAttention", "layer.0.SelfAttention.o",
                                    "layer.0.layer_norm"),
               "decoder_self": Kind("decoder", "layer.0.SelfAttention", "layer.0.SelfAttention.o",
                                    "layer.0.layer_norm"),
               "cross": Kind("decoder", "layer.1.EncDecAttention", "layer.1.EncDecAttention.o", "layer.1.layer_norm")},
        mlp={"encoder": ("layer.1.layer_norm", None), "decoder": ("layer.2.layer_norm", None)},
        pre_norm=True, qkv=Qkv(SEPARATE, ("q", "k", "v")), positions=RELATIVE_BUCKETS, terms=frozenset({RELATIVE}),
        relative_bias=relative_bias)


ARCHITECTURE = t5_like("t5")
