"""The residual stream of every call while a decode runs (the logit lens reads it), and an encoder output taken
from an earlier encoder layer (the DecoderLens).

`capture.recording_residuals` keeps one call's stream (a teacher-forced forward), the last of these. A decode calls
the decoder once a step, so `recording_calls` keeps every call's: per stack, one list of layer outputs per forward of
that stack. Its hooks record only on the thread that opened the recording: a native model has no lock, so another
session may run the same model meanwhile (its steps then take the module path, bit-identical, and are not recorded
here). The hooks only keep a reference to each layer's output (`detach`, no copy) and are removed in `finally`.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from torch import Tensor, nn


def _tensor(out: Any) -> Tensor:
    return out[0] if isinstance(out, tuple) else out


@contextmanager
def recording_calls(stacks: Mapping[str, Sequence[nn.Module]], last_only: bool = False
                    ) -> Iterator[dict[str, list[list[Tensor]]]]:
    """Per stack, one entry per forward of its layers on this thread: [embeddings, after layer 1, ..., after n],
    each (B, T, D) as the layers saw them (T: the positions fed in that call; `last_only`: its last position only,
    so a long prefill keeps one row per layer)."""
    owner = threading.get_ident()
    found: dict[str, list[list[Tensor]]] = {name: [] for name in stacks}
    handles = []
    try:
        for name, layers in stacks.items():
            def first(module: nn.Module, args: tuple, kwargs: dict, name: str = name) -> None:
                if threading.get_ident() == owner:
                    found[name].append([_last((args[0] if args else kwargs["hidden_states"]).detach(), last_only)])

            def after(module: nn.Module, args: tuple, kwargs: dict, out: Any, name: str = name) -> None:
                if threading.get_ident() == owner and found[name]:
                    found[name][-1].append(_last(_tensor(out).detach(), last_only))

            handles.append(layers[0].register_forward_pre_hook(first, with_kwargs=True))
            handles += [layer.register_forward_hook(after, with_kwargs=True) for layer in layers]
        yield found
    finally:
        for handle in handles:
            handle.remove()


def _last(t: Tensor, last_only: bool) -> Tensor:
    return t[:, -1:] if last_only else t


def check_encoder_layer(layer: int, n_layers: int, name: str) -> None:
    """ValueError unless 0 <= layer <= n_layers (0: the embeddings, n: the last layer, what the decoder reads)."""
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= n_layers:
        raise ValueError(f"{name}'s encoder has layers 1 to {n_layers}; the decoder can read 0 (the embeddings) "
                         f"to {n_layers}, not {layer!r}")
