"""Capturing a model's insides for one call: the residual stream after each layer, and what each attention's
softmax saw. Everything is borrowed for the call and given back in `finally`; nothing per-call stays on the shared
model (callers hold the model's lock where the adapter has one).

Our attention (`MultiHeadAttention`) is read with forward hooks: its own projections give q, k and v, and its mask
arguments the additive terms. A Hugging Face attention is read where every family hands its tensors to the eager
kernel, `eager_attention_forward(module, query, key, value, attention_mask, scaling=..., position_bias=...)`:
queries and keys after RoPE, T5's position bias, the additive mask, the model's own scale. That function is
looked up in its modeling module at each call, so `recording_eager` puts a pass-through recorder there once per
family; it records only for the attention modules a capture registered and calls the original unchanged.

Beside the softmax's inputs, each layer's output projection is read with a forward hook (its input: every head's
output side by side, after any head mask; its output), and an attention handed `position_embeddings` (RoPE) has its
`q_proj` / `k_proj` outputs (ModernBERT's fused `Wqkv`: its query and key parts) kept: the queries and keys before
rotation.
"""
from __future__ import annotations

import dataclasses
import sys
import threading
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence

import torch
from torch import Tensor, nn

from ..model import (
    AttentionInputs,
    MultiHeadAttention,
    RelativeBias,
    ScoreRules,
    additive_mask,
    apply_rotation,
    band_mask,
)
from .falcon import check_falcon, falcon_hook, own_attention
from .hf_load import HFModelError


def _tensor(out: Any) -> Tensor:
    return out[0] if isinstance(out, tuple) else out


@contextmanager
def recording_residuals(stacks: Mapping[str, Sequence[nn.Module]]) -> Iterator[dict[str, list[Tensor]]]:
    """Per stack, the residual stream: what its first layer reads (the embeddings), then each layer's output."""
    found: dict[str, list[Tensor]] = {name: [] for name in stacks}
    handles = []
    try:
        for name, layers in stacks.items():
            def first(module: nn.Module, args: tuple, kwargs: dict, name: str = name) -> None:
                found[name][:] = [(args[0] if args else kwargs["hidden_states"]).detach()]

            def after(module: nn.Module, args: tuple, kwargs: dict, out: Any, name: str = name) -> None:
                found[name].append(_tensor(out).detach())

            handles.append(layers[0].register_forward_pre_hook(first, with_kwargs=True))
            handles += [layer.register_forward_hook(after, with_kwargs=True) for layer in layers]
        yield found
    finally:
        for handle in handles:
            handle.remove()


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


def _projection_hooks(found: dict[str, list[AttentionInputs | None]],
                      projections: Mapping[str, Sequence[nn.Module]]) -> list[Any]:
    """Forward hooks that add each output projection's input and output to the layer's record (they run after the
    attention's softmax was recorded)."""
    handles = []
    for kind, projs in projections.items():
        for layer, proj in enumerate(projs):
            def hook(m: nn.Module, args: tuple, out: Any, kind: str = kind, layer: int = layer) -> None:
                _with_output(found, kind, layer, args[0], _tensor(out))

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


# -- Hugging Face: the eager kernel --------------------------------------------------------------------------------
Tables = dict[int, tuple[Tensor, RelativeBias]]  # T5: the bias tensor a stack's first layer made -> its table
_RECORDERS: dict[int, Callable[..., None]] = {}  # id(attention module) -> its recorder, while a capture runs
_GUARD = threading.Lock()


def _recording(original: Callable[..., Any]) -> Callable[..., Any]:
    def eager_attention_forward(module: nn.Module, query: Tensor, key: Tensor, value: Tensor,
                                attention_mask: Tensor | None, *args: Any, **kwargs: Any) -> Any:
        recorder = _RECORDERS.get(id(module))
        result = None if recorder is None else recorder(module, query, key, value, attention_mask, kwargs)
        if result is not None:  # a recorder that computed the attention itself (the store's fused kernel)
            return result
        return original(module, query, key, value, attention_mask, *args, **kwargs)

    eager_attention_forward.studio_original = original  # type: ignore[attr-defined]
    return eager_attention_forward


def _install(module: nn.Module) -> None:
    """Put the pass-through recorder on the eager kernel of `module`'s modeling module (once per family)."""
    modeling: Any = sys.modules[type(module).__module__]  # the family's modeling module, patched at run time
    with _GUARD:
        kernel = getattr(modeling, "eager_attention_forward", None)
        if kernel is None:
            raise HFModelError(f"{type(module).__name__} has no eager attention kernel: its insides cannot be read")
        if not hasattr(kernel, "studio_original"):
            modeling.eager_attention_forward = _recording(kernel)


def _groups(module: nn.Module, n_heads: int, n_kv: int) -> tuple[int, ...]:
    per_group = max(n_heads // max(n_kv, 1), 1)
    return tuple(h // per_group for h in range(n_heads))


def hf_rules(module: Any, query: Tensor, kwargs: dict, tables: Tables) -> ScoreRules:
    """The score rules an eager kernel's arguments and its module state: the scale, a sliding window (Qwen2's and
    Mistral's causal `sliding_window`, ModernBERT's half window + 1: either way |i - j| < window), soft-capping
    (Gemma 2's `softcap`), sinks (gpt-oss's `s_aux`), T5's relative bias table (the stack's first layer holds it;
    later layers get the same bias tensor, found in `tables`). Causality and padding are the store builder's (they
    come with the kind and the input)."""
    scale = kwargs.get("scaling")
    scale = query.shape[-1] ** -0.5 if scale is None else float(scale)
    window = kwargs.get("sliding_window")
    relative, bias = None, kwargs.get("position_bias")
    if getattr(module, "has_relative_attention_bias", False):
        relative = RelativeBias(module.relative_attention_bias.weight.detach(), not module.is_decoder,
                                int(module.relative_attention_max_distance))
        if bias is not None:
            tables[id(bias)] = (bias, relative)  # the tensor kept: its id is not reused while the table is read
    elif bias is not None and id(bias) in tables and tables[id(bias)][0] is bias:
        relative = tables[id(bias)][1]
    softcap, sinks = kwargs.get("softcap"), kwargs.get("s_aux")
    return ScoreRules(scale, window=int(window) if isinstance(window, int) and window > 0 else None,
                      softcap=None if softcap is None else float(softcap), relative=relative,
                      sinks=None if sinks is None else sinks.detach().float().reshape(-1))


def _hf_inputs(module: nn.Module, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None,
               kwargs: dict, tables: Tables | None = None) -> AttentionInputs:
    rules = hf_rules(module, query, kwargs, {} if tables is None else tables)
    scale = rules.scale
    terms = {}
    if kwargs.get("position_bias") is not None:
        terms["position_bias"] = kwargs["position_bias"].detach()
    if mask is not None:
        terms["mask"] = mask[..., : key.shape[-2]].detach()  # as the kernels slice it
    return AttentionInputs(query.detach(), key.detach(), value.detach(), scale, terms,
                           _groups(module, query.shape[1], key.shape[1]), rules=rules)


def _before_rotation(module: nn.Module, undo: ExitStack) -> dict[str, Tensor]:
    """Hooks that keep an attention's `q_proj` / `k_proj` outputs (ModernBERT: the query and key thirds of its fused
    `Wqkv`) while it is handed `position_embeddings` (RoPE); what they keep is read (and emptied) when its eager
    kernel runs."""
    kept: dict[str, Tensor] = {}
    q_proj, k_proj = getattr(module, "q_proj", None), getattr(module, "k_proj", None)
    fused = getattr(module, "Wqkv", None)
    if not (isinstance(q_proj, nn.Module) and isinstance(k_proj, nn.Module)) and not isinstance(fused, nn.Module):
        return kept
    rotating = [False]

    def pre(m: nn.Module, args: tuple, kwargs: dict) -> None:
        rotating[0] = kwargs.get("position_embeddings") is not None
        kept.clear()

    def keep(name: str) -> Callable[..., None]:
        def hook(m: nn.Module, args: tuple, out: Tensor) -> None:
            if rotating[0]:
                kept[name] = out.detach()
        return hook

    def keep_fused(m: nn.Module, args: tuple, out: Tensor) -> None:
        if rotating[0]:  # (B, T, 3 * H * Dh): queries, keys and values side by side, as the module views it
            q, k, _ = out.detach().view(*out.shape[:-1], 3, -1).unbind(-2)
            kept["q"], kept["k"] = q.contiguous(), k.contiguous()

    hooks = ([q_proj.register_forward_hook(keep("q")), k_proj.register_forward_hook(keep("k"))]
             if isinstance(q_proj, nn.Module) and isinstance(k_proj, nn.Module)
             else [fused.register_forward_hook(keep_fused)] if isinstance(fused, nn.Module) else [])
    for handle in (module.register_forward_pre_hook(pre, with_kwargs=True), *hooks):
        undo.callback(handle.remove)
    return kept


def _unrotated(kept: dict[str, Tensor], inputs: AttentionInputs) -> AttentionInputs:
    if "q" not in kept or "k" not in kept:
        return inputs
    b, hq, tq, d = inputs.queries.shape
    hkv, tk = inputs.keys.shape[1], inputs.keys.shape[2]
    q = kept["q"].view(b, tq, hq, d).transpose(1, 2)  # (B, H, Tq, Dh)
    k = kept["k"].view(b, tk, hkv, d).transpose(1, 2)  # (B, Hkv, Tk, Dh)
    return dataclasses.replace(inputs, unrotated=(q, k))


def _record_falcon(module: Any, found: list[AttentionInputs | None], layer: int, undo: ExitStack) -> None:
    """Hooks that put a Falcon attention's inputs, and its output projection's input and output, in `found`."""
    check_falcon(module)
    projected: list[tuple[Tensor, Tensor]] = []

    def out_hook(m: nn.Module, args: tuple, out: Any) -> None:
        projected[:] = [(args[0].detach(), _tensor(out).detach())]

    def record(m: nn.Module, inputs: AttentionInputs) -> None:
        merged, output = projected[0] if projected else (None, None)
        found[layer] = dataclasses.replace(inputs, merged=merged, output=output)

    for handle in (module.dense.register_forward_hook(out_hook),
                   module.register_forward_hook(falcon_hook(record), with_kwargs=True)):
        undo.callback(handle.remove)


@contextmanager
def recording_eager(modules: Mapping[str, Sequence[nn.Module]],
                    projections: Mapping[str, Sequence[nn.Module]] | None = None
                    ) -> Iterator[dict[str, list[AttentionInputs | None]]]:
    """Per kind and layer, what each Hugging Face attention module's eager softmax saw during the call; with
    `projections` (kind -> each layer's output projection), their input and output too."""
    found: dict[str, list[AttentionInputs | None]] = {kind: [None] * len(mods) for kind, mods in modules.items()}
    tables: Tables = {}
    with ExitStack() as undo:
        for kind, mods in modules.items():
            for layer, module in enumerate(mods):
                if own_attention(module):  # Falcon: its own attention code, read by a hook
                    _record_falcon(module, found[kind], layer, undo)
                    continue
                _install(module)
                kept = _before_rotation(module, undo)

                def record(m: nn.Module, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, kwargs: dict,
                           kind: str = kind, layer: int = layer, kept: dict[str, Tensor] = kept) -> None:
                    found[kind][layer] = _unrotated(kept, _hf_inputs(m, q, k, v, mask, kwargs, tables))

                _RECORDERS[id(module)] = record
                undo.callback(_RECORDERS.pop, id(module), None)
        for handle in _projection_hooks(found, projections or {}):
            undo.callback(handle.remove)
        yield found


def complete(found: Mapping[str, Sequence[AttentionInputs | None]], model_name: str
             ) -> dict[str, tuple[AttentionInputs, ...]]:
    """The recorded inputs, every layer present (a layer that recorded nothing means no eager attention ran)."""
    for kind, layers in found.items():
        missing = [i for i, a in enumerate(layers) if a is None]
        if missing:
            raise HFModelError(f"{model_name}: no attention inputs were recorded for {kind} layer(s) {missing} "
                               "(the insides need eager attention)")
    return {kind: tuple(a for a in layers if a is not None) for kind, layers in found.items()}
