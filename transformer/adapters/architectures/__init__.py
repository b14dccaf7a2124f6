"""One file per Hugging Face architecture the studio takes apart, each declaring its `Architecture` (`spec.py`) as
`ARCHITECTURE`; the registry is keyed by `model_type` and filled from this folder, so adding an architecture is
adding one file (and one tiny test model). A model type without a file is refused in one line."""
from __future__ import annotations

import importlib
import pkgutil
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from torch import Tensor, nn

from ..errors import HFModelError
from .spec import Architecture

_NOT_ARCHITECTURES = {"spec"}
_GUARD = threading.Lock()


def _discover() -> dict[str, Architecture]:
    found: dict[str, Architecture] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_ARCHITECTURES or info.name.startswith("_"):
            continue
        arch = getattr(importlib.import_module(f"{__name__}.{info.name}"), "ARCHITECTURE", None)
        if isinstance(arch, Architecture):
            found[arch.model_type] = arch
    return found


REGISTRY: dict[str, Architecture] = _discover()


def supported() -> list[str]:
    """Every model type with an architecture file, sorted."""
    return sorted(REGISTRY)


def architecture(model_type: str, name: str = "") -> Architecture:
    """The architecture of `model_type`; HFModelError in one line for a type without a file."""
    found = REGISTRY.get(model_type)
    if found is None:
        raise HFModelError(f"{name or model_type!r} ({model_type or 'no model_type'}): no architecture file for "
                           f"{model_type!r} in transformer/adapters/architectures/; the studio reads "
                           f"{', '.join(supported())}")
    return found


def architecture_of(model: Any, name: str = "") -> Architecture:
    """The architecture of a loaded Hugging Face model (its config's `model_type`)."""
    return architecture(getattr(getattr(model, "config", None), "model_type", "") or "", name)


def offset_norms() -> frozenset[str]:
    """Names of the norm classes that multiply by 1 + weight (Gemma's RMSNorms), over every architecture."""
    return frozenset(n for arch in REGISTRY.values() for n in arch.offset_norms)


def norm_gain(norm: nn.Module | None) -> Tensor | None:
    """A norm's scale per dimension as it multiplies, frozen (detached, float): its weight, or 1 + weight for a norm
    class an architecture file declares so (Gemma's RMSNorms); None for a norm without one."""
    weight = getattr(norm, "weight", None) if norm is not None else None
    if not isinstance(weight, Tensor):
        return None
    return weight.detach().float() + 1 if type(norm).__name__ in offset_norms() else weight.detach().float()


@contextmanager
def registered(arch: Architecture) -> Iterator[Architecture]:
    """`arch` in the registry while inside (an architecture defined outside this folder: a test's); removed in
    `finally`."""
    with _GUARD:
        if arch.model_type in REGISTRY:
            raise ValueError(f"{arch.model_type!r} already has an architecture file")
        REGISTRY[arch.model_type] = arch
    try:
        yield arch
    finally:
        with _GUARD:
            REGISTRY.pop(arch.model_type, None)


__all__ = ["REGISTRY", "Architecture", "architecture", "architecture_of", "norm_gain", "offset_norms", "registered",
           "supported"]
