"""A faster output projection for one-token decoder steps of a Hugging Face model, borrowed for a call.

`nn.Linear` computes `x @ W.T` with `W` stored (vocabulary, d_model); for one query row on a CPU that is a
matrix-vector product over the whole output embedding, the largest weight an opus-mt-size model reads per step
(58,101 x 512). The same product with the weight stored transposed, (d_model, vocabulary), runs about twice as
fast on CPU (`bench/README.md`, "Hugging Face decoding"). The values are the same up to float rounding (a
different summation order), which the equality tests with `generate` (1e-5) cover.

The transposed copy is made once per model and weights version and kept beside the model, never on it: one
extra copy of the output embedding in memory (~119 MB for opus-mt-en-de).
"""
from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager
from typing import Iterator

from torch import Tensor, nn

_HEADS: "weakref.WeakKeyDictionary[nn.Module, tuple[tuple[int, int], TransposedHead]]" = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


class TransposedHead(nn.Module):
    """`linear(x)` computed as `x @ weight_t (+ bias)` with the weight stored (in_features, out_features)."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.weight_t = linear.weight.detach().t().contiguous()  # (D, V)
        self.bias = None if linear.bias is None else linear.bias.detach()  # (V,)

    def forward(self, x: Tensor) -> Tensor:  # (..., D) -> (..., V)
        out = x @ self.weight_t
        return out if self.bias is None else out + self.bias


def _head_attribute(model: nn.Module) -> str | None:
    """The name under which `model` holds its output embedding as a direct child, if it does."""
    head = model.get_output_embeddings()
    if not isinstance(head, nn.Linear) or type(head) is not nn.Linear:
        return None
    return next((name for name, child in model.named_children() if child is head), None)


def transposed_head(model: nn.Module) -> TransposedHead | None:
    """The transposed copy of `model`'s output embedding (rebuilt when its weights change), or None."""
    name = _head_attribute(model)
    if name is None:
        return None
    weight = getattr(model, name).weight
    version = (weight.data_ptr(), weight._version)
    with _GUARD:
        cached = _HEADS.get(model)
        if cached is None or cached[0] != version:
            cached = _HEADS[model] = (version, TransposedHead(getattr(model, name)))
    return cached[1]


@contextmanager
def fast_output_head(model: nn.Module) -> Iterator[None]:
    """While inside, `model`'s output embedding is its transposed copy; restored in `finally`. Hold
    `model_lock(model)` around it: nobody else may run the model meanwhile."""
    name = _head_attribute(model)
    fast = transposed_head(model) if name is not None else None
    if fast is None:
        yield
        return
    original = getattr(model, name)
    setattr(model, name, fast)
    try:
        yield
    finally:
        setattr(model, name, original)
