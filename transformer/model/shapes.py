"""Models built for their shapes alone: on the meta device, with their random initialisation skipped.

A meta tensor has no values, so filling one is a no-op; but `normal_` and `arange` (among others) on the meta device
run through PyTorch's Python references, whose first call imports `torch._dynamo` (~2 s of CPU, once per process).
Loading a checkpoint or counting a config's parameters needs only shapes, so the fills are skipped, and the fixed
tables a model computes in its constructor (positions, RoPE frequencies) come back empty (`meta_default`).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode

# Tensor methods that only write random values into their tensor
RANDOM_FILLS = frozenset({"normal_", "uniform_", "erfinv_", "exponential_", "log_normal_", "cauchy_", "geometric_",
                          "random_", "bernoulli_"})


def _is_fill(func: Any) -> bool:
    """Whether `func` only writes values into the tensor it is given: `torch.nn.init`'s functions, the random fills."""
    return getattr(func, "__module__", None) == "torch.nn.init" or getattr(func, "__name__", None) in RANDOM_FILLS


class _SkipMetaFills(TorchFunctionMode):
    """Returns a meta tensor unchanged from a call that would only fill it with values."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        target = args[0] if args else kwargs.get("tensor")
        if isinstance(target, torch.Tensor) and target.is_meta and _is_fill(func):
            return target
        return func(*args, **kwargs)


def meta_default() -> bool:
    """Whether tensors are made on the meta device by default (inside `shapes_only`): a table computed now would
    only be thrown away, so its shape is enough."""
    return torch.get_default_device().type == "meta"


@contextmanager
def shapes_only() -> Iterator[None]:
    """Modules built inside have meta parameters (nothing allocated) and skip their initialisation; thread-local, like
    `torch.device`."""
    with torch.device("meta"), _SkipMetaFills():
        yield
