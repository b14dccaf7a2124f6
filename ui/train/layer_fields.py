"""The Train form's local and global layers and log-n scaling (`ModelConfig.window`, `global_every`, `logn_length`;
`train --window`, `--global-every`, `--logn-length`): the window and the global layers offered for rope positions on
the decoder-only architecture, log-n scaling for the decoder-only architecture, checked by the model config itself."""
from __future__ import annotations

from typing import Any, Mapping

from transformer.model import ConfigError, ModelConfig

from .rope_base import rope_chosen

WINDOW_HELP = ("With rope: local layers rotate their queries and keys and see only the N latest positions (a sliding "
               "window, as Mistral's); 0 (default): none, every layer sees every position. Only with rope positions "
               "on the decoder-only architecture.")
GLOBAL_EVERY_HELP = ("With a window: every K-th layer is global, seeing every position with no positions at all "
                     "(NoPE), as Command A and Llama 4 interleave them; the others are local. 0 (default): every "
                     "layer local. Only with rope positions on the decoder-only architecture.")
LOGN_HELP = ("Decoder-only: a query that sees n > N keys is multiplied by ln n / ln N (log-n scaling, as Qwen's logn "
             "attention and Nakanishi 2025's scalable softmax), so its weights stay as sharp past the trained length "
             "as within it; 0 (default): none.")
ROPE_LAYER_FIELDS = ("window", "global_every")  # offered with rope positions on the decoder-only architecture
DECODER_FIELDS = ("logn_length",)  # offered on the decoder-only architecture


def decoder_only_chosen(state: Mapping[Any, Any]) -> bool:
    """Whether the form asks for the decoder-only architecture (where log-n scaling applies)."""
    return state.get("train_architecture") == "decoder-only"


def layers_problem(state: Mapping[Any, Any]) -> str | None:
    """The model config's own message for the form's window, global layers and log-n scaling when it refuses them
    (None: fine, or none of them offered)."""
    if not decoder_only_chosen(state):
        return None
    names = (ROPE_LAYER_FIELDS if rope_chosen(state) else ()) + DECODER_FIELDS
    try:
        ModelConfig(64, 64, architecture="decoder-only", positions=state.get("train_positions", "sinusoidal"),
                    **{name: state.get(f"train_{name}", 0) for name in names})
    except ConfigError as exc:
        return f"{exc}."
    return None
