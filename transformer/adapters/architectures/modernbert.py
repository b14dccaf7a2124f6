"""ModernBERT: pre-norm (`attn_norm`, an identity on the first layer; `mlp_norm`; `final_norm`), an embedding norm,
q, k and v fused one after another in `Wqkv`, RoPE, local layers with a window of half `local_attention` on each
side; its MLM head reads the base model's final norm, then `head` and `decoder`."""
from __future__ import annotations

from typing import Any, Callable

from torch import Tensor, nn

from .spec import ROTARY, ROTATE_HALF, SEQUENTIAL, WINDOW, Architecture, Kind, Qkv, Stack, base_of


def _head(model: Any) -> Callable[[Tensor], Tensor]:
    norm = getattr(base_of(model), "final_norm", None) or nn.Identity()
    return lambda h: model.decoder(model.head(norm(h)))


ARCHITECTURE = Architecture(
    model_type="modernbert", family="encoder-only",
    stacks={"encoder": Stack("layers", embedding_norm="embeddings.norm", final_norm="final_norm")},
    kinds={"encoder_self": Kind("encoder", "attn", "attn.Wo", "attn_norm")},
    mlp={"encoder": ("mlp_norm", None)},
    pre_norm=True, qkv=Qkv(SEQUENTIAL, ("Wqkv",)), positions=ROTARY, rope=ROTATE_HALF, terms=frozenset({WINDOW}),
    masked_head=_head)
