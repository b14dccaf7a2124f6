"""A faster output projection for the decoder steps of a Hugging Face model, borrowed for a call.

`nn.Linear` computes `x @ W.T` with `W` stored (vocabulary, d_model); for one query row on a CPU that is a
matrix-vector product over the whole output embedding, the largest weight an opus-mt-size model reads per step
(58,101 x 512). The same product with the weight stored transposed, (d_model, vocabulary), runs about twice as
fast on CPU (`bench/README.md`, "Hugging Face decoding"). The values are the same up to float rounding (a
different summation order), which the equality tests with `generate` (1e-5) cover.

The transposed copy is made once per model and weights version and kept beside the model, never on it: one
extra copy of the output embedding in memory (~119 MB for opus-mt-en-de). While borrowed, only the head's
`forward` changes: its module, weight and parameters stay what everyone else reads.
"""
from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from torch import Tensor, nn

if TYPE_CHECKING:
    from transformers import PreTrainedModel  # its stubs are not followed (pyproject): Any to mypy

_COPIES: "weakref.WeakKeyDictionary[nn.Module, tuple[tuple[int, int], Tensor]]" = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def transposed_weight(head: nn.Linear) -> Tensor:
    """`head.weight` stored (in_features, out_features), rebuilt when the weight changes."""
    weight = head.weight
    version = (weight.data_ptr(), weight._version)
    with _GUARD:
        cached = _COPIES.get(head)
        if cached is None or cached[0] != version:
            cached = _COPIES[head] = (version, weight.detach().t().contiguous())  # (D, V)
    return cached[1]


@contextmanager
def fast_output_head(model: PreTrainedModel) -> Iterator[None]:
    """While inside, `model`'s output embedding computes `x @ W_t (+ bias)`; its own forward is back in `finally`.
    Hold `model_lock(model)` around it: nobody else may run the model meanwhile."""
    head = model.get_output_embeddings()
    if type(head) is not nn.Linear:
        yield
        return
    weight_t, bias = transposed_weight(head), head.bias

    def forward(x: Tensor) -> Tensor:  # (..., D) -> (..., V)
        out = x @ weight_t
        return out if bias is None else out + bias

    saved = head.__dict__.get("forward")
    head.forward = forward  # type: ignore[method-assign,assignment]  # an instance attribute shadows the method
    try:
        yield
    finally:
        if saved is None:
            head.__dict__.pop("forward", None)
        else:
            head.forward = saved  # type: ignore[method-assign]
