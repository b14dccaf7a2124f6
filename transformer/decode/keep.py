"""What a decode keeps of the attention: the maps (every weight, n × n per head) or the attention store (what
recomputes any weight exactly, no n × n tensor). `keeps_store` is the one place the choice is made and the one
threshold lives: the CLI, the app and the notebook all decode with `keep="auto"` unless the user asks."""
from __future__ import annotations

from typing import Any

from ..adapters import InspectableModel
from .errors import InputError

KEEPS = ("auto", "maps", "store")
STORE_ABOVE = 1024  # prompt tokens above which "auto" keeps the store (a decoder-only model's maps would be n × n)
STORED_STEPS = 16  # a stored decode's most steps when the caller does not say (each reads every key of the prompt)


def keeps_store(adapter: InspectableModel, n_prompt: int, keep: str = "auto", above: int = STORE_ABOVE) -> bool:
    """Whether a decode whose decoder reads `n_prompt` inputs first keeps the store instead of maps: "maps" and
    "store" say so themselves; "auto" keeps the store for a decoder-only model's prompt of more than `above`
    tokens. Raises InputError for another word, or "store" on a model whose prompt is not in its decoder."""
    if keep not in KEEPS:
        raise InputError(f"keep must be one of {', '.join(KEEPS)}, not {keep!r}")
    causal = adapter.family.prompt_in_decoder
    if keep == "store" and not causal:
        raise InputError(f"{adapter.name} is not a decoder-only model: the attention store reads a decoder-only "
                        "model's prompt (keep 'maps' or 'auto')")
    return keep == "store" or (keep == "auto" and causal and n_prompt > above)


def model_context(adapter: InspectableModel) -> int:
    """The longest sequence the model itself reads (its config's positions; ours: `max_len`)."""
    context = getattr(adapter, "context", None)
    native: Any = adapter  # without a context: one of our adapters, whose network's config has max_len
    return int(context) if context else int(native.model.cfg.max_len)
