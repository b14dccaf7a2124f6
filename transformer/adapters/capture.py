"""Capturing a model's insides for one call: the residual stream after each layer, what each of our attentions'
softmax saw, and each output projection's input and output. Everything is borrowed for the call and given back in
`finally`; nothing per-call stays on the shared model (callers hold the model's lock where the adapter has one).

Our attention (`MultiHeadAttention`) is read with forward hooks: its own projections give q, k and v, and its mask
arguments the additive terms. A Hugging Face attention is read by the registered `studio` kernel (`hf_capture`).
Each layer's output projection is read with a forward hook (its input: every head's output side by side, after any
head mask; its output).
"""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

import torch
from torch import Tensor, nn

from ..model import AttentionInputs, MultiHeadAttention, ScoreRules, additive_mask, apply_rotation, band_mask
from .errors import HFModelError
from .residual_steps import recording_calls


def first_tensor(out: Any) -> Tensor:
    return out[0] if isinstance(out, tuple) else out


@contextmanager
def recording_residuals(stacks: Mapping[str, Sequence[nn.Module]]) -> Iterator[dict[str, list[Tensor]]]:
    """Per stack, the residual stream of the last call made inside (on this thread): what its first layer reads (the
    embeddings), then each layer's output; filled when the block ends (`residual_steps.recording_calls` keeps every
    call's)."""
    found: dict[str, list[Tensor]] = {name: [] for name in stacks}
    with recording_calls(stacks) as calls:
        yield found
    for name, made in calls.items():
        found[name][:] = made[-1] if made else []


def _heads(x: Tensor, n_heads: int) -> Tensor:
    b, t, _ = x.shape
    return x.view(b, t, n_heads, -1).transpose(1, 2)  # (B, H, T, Dh)


def _native_inputs(module: MultiHeadAttention, args: tuple, kwargs: dict, terms: bool = True) -> AttentionInputs:
    """What our attention's softmax saw, from its own projections and mask arguments (see `attention_weights`);
    without `terms`, no additive mask (the store reads the rules instead: no (Tq, Tk) tensor at long inputs)."""
    x, kv, cache = args[0], kwargs.get("kv"), kwargs.get("cache")
    if kv is None:
        q, k, v = (_heads(t, module.n_heads) for t in module.in_proj(x).chunk(3, dim=-1))
        rotary = kwargs.get("rotary")
        if rotary is not None:  # RoPE: the queries and keys the softmax saw are the rotated ones
            q, k = apply_rotation(q, rotary), apply_rotation(k, rotary)
        if cache is not None:  # a cached step: the keys and values of every position so far
            k, v = cache.k.narrow(2, 0, cache.length), cache.v.narrow(2, 0, cache.length)
    else:
        q, (k, v) = _heads(torch.nn.functional.linear(x, *_q_weights(module)), module.n_heads), kv
    if kwargs.get("q_scale") is not None:  # log-n scaling: the queries the softmax saw are the scaled ones
        q = q * kwargs["q_scale"]
    term = _mask_term(kwargs, module.window, q, k.shape[2]) if terms else None
    rules = ScoreRules(q.shape[-1] ** -0.5, window=module.window) if module.window is not None else None
    return AttentionInputs(q.detach(), k.detach(), v.detach(), q.shape[-1] ** -0.5,
                           {} if term is None else {"mask": term}, rules=rules)


def _mask_term(kwargs: dict, window: int | None, q: Tensor, n_keys: int) -> Tensor | None:
    """The additive mask our attention applied: its mask argument, the causal rule (the queries the last of the keys'
    positions) and a local layer's `window`."""
    mask, causal = kwargs.get("mask"), bool(kwargs.get("is_causal"))
    if window is not None and causal and mask is None:  # a local layer's causal pass: its band
        mask, causal = band_mask(q.shape[2], n_keys, window, q.device), False
    return additive_mask(mask, causal, q.shape[2], n_keys, q)


def _q_weights(module: MultiHeadAttention) -> tuple[Tensor, Tensor]:
    return module.in_proj.weight[: module.d_model], module.in_proj.bias[: module.d_model]


def projection_weights(proj: Any) -> tuple[Tensor, Tensor | None]:
    """An output projection's weight as nn.Linear holds it, (out, in), and its bias (None without): GPT-2's Conv1D
    keeps its weight as (in, out)."""
    weight = proj.weight if isinstance(proj, nn.Linear) else proj.weight.t()
    return weight, getattr(proj, "bias", None)


def _with_output(found: dict[str, list[AttentionInputs | None]], kind: str, layer: int, merged: Tensor,
                 output: Tensor) -> None:
    inputs = found[kind][layer]
    if inputs is not None:
        found[kind][layer] = dataclasses.replace(inputs, merged=merged.detach(), output=output.detach())


def projection_hooks(found: dict[str, list[AttentionInputs | None]],
                      projections: Mapping[str, Sequence[nn.Module]]) -> list[Any]:
    """Forward hooks that add each output projection's input and output to the layer's record (they run after the
    attention's softmax was recorded)."""
    handles = []
    for kind, projs in projections.items():
        for layer, proj in enumerate(projs):
            def hook(m: nn.Module, args: tuple, out: Any, kind: str = kind, layer: int = layer) -> None:
                _with_output(found, kind, layer, args[0], first_tensor(out))

            handles.append(proj.register_forward_hook(hook))
    return handles


@contextmanager
def recording_native(modules: Mapping[str, Sequence[MultiHeadAttention]], terms: bool = True
                     ) -> Iterator[dict[str, list[AttentionInputs | None]]]:
    """Per kind and layer, what our attention modules' softmax saw during the call (without `terms`: no additive
    mask), and their output projection's input and output."""
    found: dict[str, list[AttentionInputs | None]] = {kind: [None] * len(mods) for kind, mods in modules.items()}
    projected: dict[tuple[str, int], tuple[Tensor, Tensor]] = {}
    handles = []
    try:
        for kind, mods in modules.items():
            for layer, module in enumerate(mods):
                def hook(m: Any, args: tuple, kwargs: dict, out: Any, kind: str = kind, layer: int = layer
                         ) -> None:
                    found[kind][layer] = _native_inputs(m, args, kwargs, terms)
                    if (kind, layer) in projected:
                        _with_output(found, kind, layer, *projected.pop((kind, layer)))

                def out_hook(m: nn.Module, args: tuple, out: Tensor, kind: str = kind, layer: int = layer) -> None:
                    projected[(kind, layer)] = (args[0], out)

                handles.append(module.out_proj.register_forward_hook(out_hook))
                handles.append(module.register_forward_hook(hook, with_kwargs=True))
        yield found
    finally:
        for handle in handles:
            handle.remove()


def complete(found: Mapping[str, Sequence[AttentionInputs | None]], model_name: str
             ) -> dict[str, tuple[AttentionInputs, ...]]:
    """The recorded inputs, every layer present (a layer that recorded nothing means no eager attention ran)."""
    for kind, layers in found.items():
        missing = [i for i, a in enumerate(layers) if a is None]
        if missing:
            raise HFModelError(f"{model_name}: no attention inputs were recorded for {kind} layer(s) {missing} "
                               "(the insides need eager attention)")
    return {kind: tuple(a for a in layers if a is not None) for kind, layers in found.items()}
