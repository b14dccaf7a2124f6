"""BERT: an encoder-only masked LM, post-norm (`attention.output.LayerNorm`, `output.LayerNorm` after each sum),
learned positions and an embedding norm, separate `query`, `key`, `value`; its MLM head is `cls`."""
from __future__ import annotations

from typing import Any, Callable

from torch import Tensor

from .spec import LEARNED, SEPARATE, Architecture, Kind, Qkv, Stack


def bert_like(model_type: str, head: Callable[[Any], Callable[[Tensor], Tensor]],
              position_offset: Callable[[Any], int] = lambda config: 0) -> Architecture:
    """The BERT layout (BERT, RoBERTa, XLM-R, CamemBERT) with its MLM head and position offset."""
    return Architecture(
        model_type=model_type, family="encoder-only",
        stacks={"encoder": Stack("encoder.layer", "embeddings.position_embeddings", "embeddings.LayerNorm")},
        kinds={"encoder_self": Kind("encoder", "attention.self", "attention.output.dense",
                                    "attention.output.LayerNorm")},
        mlp={"encoder": ("output.LayerNorm", None)},
        pre_norm=False, qkv=Qkv(SEPARATE, ("query", "key", "value")), positions=LEARNED, masked_head=head,
        position_offset=position_offset)


ARCHITECTURE = bert_like("bert", lambda model: model.cls)
