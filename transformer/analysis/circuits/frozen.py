"""What the graph forward borrows from a model beyond its attention: norms on the stream frozen at the clean run, and
each MLP as one callable from its input to its output.

A post-norm model's norm after each sum (BART, Marian, BERT, RoBERTa, DistilBERT, ours with `norm: post`) and a norm
on a sublayer's output (Gemma 2 and 3) are not linear; frozen at the clean run each is: a LayerNorm is
`(x − mean(x)) / σ_t · γ + β` with σ_t the clean run's at that position, an RMSNorm `x / rms_t · γ` (the one
`FrozenNorm` the residual parts use, `analysis/residual_parts.py`). Its linear part then goes through every node's
output on its own (so a node's output reaches a later input through every frozen norm between them) and its shift β
joins the biases. On the clean run this is the model's own norm; on any other input it is the clean run's.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, Sequence

from torch import Tensor, nn

from ..why.residual_parts import FrozenNorm, PathCapture, frozen_at


def frozen_norm(cap: PathCapture, norm: nn.Module) -> FrozenNorm:
    """`norm` frozen at the input it read in the capture (the clean run)."""
    return frozen_at(norm, cap.record.norm_input(norm)[0].float())


class InlineMLP(nn.Module):
    """An MLP its layer writes inline (BART, Marian, mBART: `fc2(act(fc1(x)))`; BERT, RoBERTa: `output.dense` after
    `intermediate`) as one module over the model's own pieces."""

    def __init__(self, first: nn.Module, act: nn.Module | None, last: nn.Module) -> None:
        super().__init__()
        self.first, self.act, self.last = first, act, last

    def forward(self, x: Tensor) -> Tensor:
        h = self.first(x)
        return self.last(h if self.act is None else self.act(h))


def whole_mlp(network: nn.Module, found: nn.Module) -> nn.Module:
    """The MLP whose first module `found` is (the first fed the norm before it): `found` itself, or the inline MLP
    its layer writes around it."""
    names = {id(m): n for n, m in network.named_modules()}
    name = names.get(id(found), "")
    parent = network.get_submodule(name.rsplit(".", 1)[0]) if "." in name else network
    last = name.rsplit(".", 1)[-1]
    act, fc2 = getattr(parent, "activation_fn", None), getattr(parent, "fc2", None)
    if last == "fc1" and isinstance(fc2, nn.Module) and isinstance(act, nn.Module):
        return InlineMLP(found, act, fc2)
    dense = getattr(getattr(parent, "output", None), "dense", None)
    if last == "intermediate" and isinstance(dense, nn.Module):
        return InlineMLP(found, None, dense)
    return found


@contextmanager
def watching(network: nn.Module, read: Sequence[nn.Module], after: dict[int, tuple[str, int]]
             ) -> Iterator[tuple[dict[int, Tensor], dict[tuple[str, int], nn.Module]]]:
    """While inside, on this thread only: the input each module of `read` took (by id: OLMo 2's query and key norms
    over every head), and for each output norm in `after` (id -> (stack, layer)) the outermost module whose output it
    normed (the MLP of a layer with no norm before its MLP: OLMo 2). Hooks are borrowed and removed in `finally`."""
    me, handles = threading.get_ident(), []
    watched = {id(m) for m in read}
    inputs: dict[int, Tensor] = {}
    made: dict[int, nn.Module] = {}
    found: dict[tuple[str, int], nn.Module] = {}

    def before(module: nn.Module, args: tuple) -> None:
        if threading.get_ident() != me or not args or not isinstance(args[0], Tensor):
            return
        if id(module) in watched:
            inputs[id(module)] = args[0].detach()
        key = after.get(id(module))
        if key is not None and key not in found and id(args[0]) in made:
            found[key] = made[id(args[0])]

    def wrote(module: nn.Module, args: tuple, out: object) -> None:
        if threading.get_ident() == me and isinstance(out, Tensor):
            made[id(out)] = module  # an inner module first, then the one around it: the outermost stays

    try:
        for module in network.modules():
            if module is not network and after:
                handles.append(module.register_forward_hook(wrote))
            if id(module) in watched or id(module) in after:
                handles.append(module.register_forward_pre_hook(before))
        yield inputs, found
    finally:
        for handle in handles:
            handle.remove()


__all__ = ["FrozenNorm", "InlineMLP", "frozen_at", "frozen_norm", "watching", "whole_mlp"]
