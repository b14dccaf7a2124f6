"""Running a shared model in eval mode for one call, with gradients off (decoding) or on (attribution)."""
from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from typing import Any, Callable, Iterator

import torch
from torch import nn


@contextmanager
def eval_mode(model: nn.Module,
              grad_mode: Callable[[], AbstractContextManager[Any]] = torch.inference_mode) -> Iterator[None]:
    """Run with dropout off under `grad_mode` (no gradients by default); restores the previous mode."""
    was_training = model.training
    model.eval()
    try:
        with grad_mode():
            yield
    finally:
        model.train(was_training)
