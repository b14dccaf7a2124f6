"""BART: an encoder-decoder, post-norm (each sublayer's norm after its sum), learned positions (offset 2), an
embedding norm on each stack, separate q, k, v projections."""
from __future__ import annotations

from .spec import LEARNED, SEPARATE, Architecture, Kind, Qkv, Stack


def seq2seq(model_type: str, pre_norm: bool, positions: str) -> Architecture:
    """The BART layout (BART, mBART, Marian): `layers` per stack, `self_attn` and the decoder's `encoder_attn`."""
    def stack(side: str) -> Stack:
        return Stack(f"{side}.layers", f"{side}.embed_positions", f"{side}.layernorm_embedding", f"{side}.layer_norm",
                     f"{side}.embed_tokens")

    return Architecture(
        model_type=model_type, family="encoder-decoder",
        stacks={"encoder": stack("encoder"), "decoder": stack("decoder")},
        kinds={"encoder_self": Kind("encoder", "self_attn", "self_attn.out_proj", "self_attn_layer_norm"),
               "decoder_self": Kind("decoder", "self_attn", "self_attn.out_proj", "self_attn_layer_norm"),
               "cross": Kind("decoder", "encoder_attn", "encoder_attn.out_proj", "encoder_attn_layer_norm")},
        mlp={"encoder": ("final_layer_norm", None), "decoder": ("final_layer_norm", None)},
        pre_norm=pre_norm, qkv=Qkv(SEPARATE, ("q_proj", "k_proj", "v_proj")), positions=positions)


ARCHITECTURE = seq2seq("bart", pre_norm=False, positions=LEARNED)
