"""DistilBERT: `distilbert.transformer.layer`, post-norm (`sa_layer_norm`, `output_layer_norm`), learned positions
and an embedding norm, `q_lin`, `k_lin`, `v_lin`, `out_lin`; its MLM head is a dense layer, an activation, a norm
and the projection."""
from __future__ import annotations

from typing import Any, Callable

from torch import Tensor

from .spec import LEARNED, SEPARATE, Architecture, Kind, Qkv, Stack


def _head(model: Any) -> Callable[[Tensor], Tensor]:
    return lambda h: model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))


ARCHITECTURE = Architecture(
    model_type="distilbert", family="encoder-only",
    stacks={"encoder": Stack("transformer.layer", "embeddings.position_embeddings", "embeddings.LayerNorm")},
    kinds={"encoder_self": Kind("encoder", "attention", "attention.out_lin", "sa_layer_norm")},
    mlp={"encoder": ("output_layer_norm", None)},
    pre_norm=False, qkv=Qkv(SEPARATE, ("q_lin", "k_lin", "v_lin")), positions=LEARNED, masked_head=_head)
