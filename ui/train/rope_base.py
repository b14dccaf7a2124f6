"""The Train form's RoPE base (`ModelConfig.rope_base`, `train --rope-base`): offered when the form asks for rope
positions on the decoder-only architecture, checked by the model config itself."""
from __future__ import annotations

from typing import Any, Mapping

from transformer.model import ConfigError, ModelConfig

ROPE_BASE_KEY = "train_rope_base"
ROPE_BASE_HELP = ("RoPE's base (default 10000): pair i of a head's dimensions turns by base^(-2i/head size) per "
                  "position; larger turns the slow pairs less per position, so a content match holds over longer "
                  "streams. Only with rope positions on the decoder-only architecture.")


def rope_chosen(state: Mapping[Any, Any]) -> bool:
    """Whether the form asks for rope positions on the decoder-only architecture (where the base applies)."""
    return state.get("train_architecture") == "decoder-only" and state.get("train_positions") == "rope"


def rope_problem(state: Mapping[Any, Any]) -> str | None:
    """The model config's own message for the form's RoPE base when it refuses it (None: fine, or not rope)."""
    if not rope_chosen(state):
        return None
    try:
        ModelConfig(64, 64, architecture="decoder-only", positions="rope",
                    rope_base=state.get(ROPE_BASE_KEY, ModelConfig.rope_base))
    except ConfigError as exc:
        return f"RoPE base: {exc}."
    return None
