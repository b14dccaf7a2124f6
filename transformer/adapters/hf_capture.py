"""The one capture of a Hugging Face attention: `studio`, an attention implementation registered through transformers'
`AttentionInterface` (with its mask function through `AttentionMaskInterface`), set on every model the studio adopts.

Where a call asks nothing, `studio` is the family's own eager kernel, called with the arguments it was handed (so
the weights a decode returns are eager's, bit for bit). A capture (`recording_hf`) puts one recorder per attention
module into the one registry, `_CALLS`, keyed by the calling thread, and takes it out in `finally`; nothing per-call is
put on the model. A recorder either keeps what the eager softmax saw (queries and keys after RoPE, the values, the
additive mask, T5's position bias, the scale; the rules its architecture declares) and runs the eager kernel, or
(with store chunks) runs the fused kernel that returns each row's log-sum-exp (`store_forward`) and keeps the store's
rows; for that call the mask function gives SDPA's masks (none for one causal prompt), else eager's.

Beside the softmax's inputs, each layer's output projection is read with a forward hook, and an attention handed
`position_embeddings` (RoPE) has its query and key projections' outputs kept (where its architecture lays q, k and v
out separately or one after another): the queries and keys before rotation. A family whose attention is its own code
(Falcon) is captured by its architecture file's `own` hook instead."""
from __future__ import annotations

import dataclasses
import sys
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Mapping

import torch
from torch import Tensor, nn

from ..model import AttentionInputs, ScoreRules, StoreError, value_norms
from .architectures import Architecture, architecture_of
from .architectures.spec import ALIBI, RELATIVE, SEPARATE, SEQUENTIAL, SINKS, SOFTCAP, WINDOW, find, heads_of
from .capture import projection_hooks, projection_weights
from .errors import HFModelError
from .store_forward import StoreChunks, capped_attention, cuda_attention

STUDIO = "studio"  # the registered attention implementation (and mask function) of every adopted model
Tables = dict[int, tuple[Tensor, Any]]  # T5: the bias tensor a stack's first layer made -> its table


@dataclass(frozen=True)
class _Call:
    """One capture on one thread: a recorder per attention module (by id), whether the fused kernel runs, and the
    captured model's config (the masks of another model called meanwhile stay eager's)."""

    recorders: dict[int, Callable[..., Any]]
    fused: bool
    config: Any


_CALLS: dict[int, _Call] = {}  # thread id -> its capture, while one runs: the one recorder registry
_GUARD = threading.Lock()


def _eager(module: nn.Module) -> Callable[..., Any]:
    kernel = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if kernel is None:
        raise HFModelError(f"{type(module).__name__} has no eager attention kernel: its insides cannot be read")
    return kernel


def _attention(module: nn.Module, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor | None,
               *args: Any, **kwargs: Any) -> Any:
    """The `studio` implementation: the calling thread's recorder for `module` where a capture runs, else eager."""
    call = _CALLS.get(threading.get_ident())
    recorder = None if call is None else call.recorders.get(id(module))
    if recorder is not None:
        return recorder(module, query, key, value, attention_mask, args, kwargs)
    return _eager(module)(module, query, key, value, attention_mask, *args, **kwargs)


def _mask(*args: Any, **kwargs: Any) -> Any:
    """The `studio` mask: SDPA's for the model whose capture on this thread runs the fused kernel, else eager's."""
    from transformers.masking_utils import eager_mask, sdpa_mask
    call = _CALLS.get(threading.get_ident())
    fused = call is not None and call.fused and kwargs.get("config") is call.config
    return (sdpa_mask if fused else eager_mask)(*args, **kwargs)


def register() -> None:
    """Register `studio` with transformers (once; before a model is loaded with it)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface
    with _GUARD:
        if STUDIO not in AttentionInterface._global_mapping:
            AttentionMaskInterface.register(STUDIO, _mask)
            AttentionInterface.register(STUDIO, _attention)


def adopt(model: Any, name: str = "") -> Architecture:
    """The model's architecture (refused in one line without a file), its attention set to `studio` once (a
    family with its own attention code keeps what it has)."""
    arch = architecture_of(model, name)
    if arch.own is None and getattr(model.config, "_attn_implementation", None) != STUDIO:
        register()
        model.set_attn_implementation(STUDIO)
    return arch


def _groups(n_heads: int, n_kv: int) -> tuple[int, ...]:
    per_group = max(n_heads // max(n_kv, 1), 1)
    return tuple(h // per_group for h in range(n_heads))


def hf_rules(arch: Architecture, module: Any, query: Tensor, kwargs: dict, tables: Tables) -> ScoreRules:
    """The score rules of a kernel's arguments, as far as the architecture declares them (a term it does not declare
    is refused in one line): the scale, a sliding window (|i - j| < window), soft-capping, sinks, T5's relative bias
    table (the stack's first layer holds it; later layers get the same bias tensor, found in `tables`). Causality and
    padding are the store builder's."""
    scale = kwargs.get("scaling")
    scale = query.shape[-1] ** -0.5 if scale is None else float(scale)
    given = {WINDOW: kwargs.get("sliding_window"), SOFTCAP: kwargs.get("softcap"), SINKS: kwargs.get("s_aux"),
             RELATIVE: kwargs.get("position_bias")}
    extra = sorted(t for t, v in given.items() if v is not None and t not in arch.terms)
    if extra or ALIBI in arch.terms and kwargs.get("alibi") is not None:
        raise HFModelError(f"{arch.model_type}: its attention adds {', '.join(extra) or ALIBI}, which its "
                           "architecture file does not declare: its insides are not read")
    window, softcap, sinks, bias = given[WINDOW], given[SOFTCAP], given[SINKS], given[RELATIVE]
    relative = None
    if RELATIVE in arch.terms and arch.relative_bias is not None:
        relative = arch.relative_bias(module)
        if relative is not None and bias is not None:
            tables[id(bias)] = (bias, relative)  # the tensor kept: its id is not reused while the table is read
        elif bias is not None and id(bias) in tables and tables[id(bias)][0] is bias:
            relative = tables[id(bias)][1]
    return ScoreRules(scale, window=int(window) if isinstance(window, int) and window > 0 else None,
                      softcap=None if softcap is None else float(softcap), relative=relative,
                      sinks=None if sinks is None else sinks.detach().float().reshape(-1))


def _inputs(arch: Architecture, module: nn.Module, query: Tensor, key: Tensor, value: Tensor,
            mask: Tensor | None, kwargs: dict, tables: Tables) -> AttentionInputs:
    rules = hf_rules(arch, module, query, kwargs, tables)
    terms = {}
    if kwargs.get("position_bias") is not None:
        terms["position_bias"] = kwargs["position_bias"].detach()
    if mask is not None:
        terms["mask"] = mask[..., : key.shape[-2]].detach()  # as the kernels slice it
    return AttentionInputs(query.detach(), key.detach(), value.detach(), rules.scale, terms,
                           _groups(query.shape[1], key.shape[1]), rules=rules)


def _before_rotation(arch: Architecture, module: nn.Module, config: Any, undo: ExitStack) -> dict[str, Tensor]:
    """Hooks that keep an attention's query and key projections' outputs while it is handed `position_embeddings`
    (RoPE); what they keep is read (and emptied) when its kernel runs. Separate and sequential layouts only."""
    kept: dict[str, Tensor] = {}
    if arch.rope is None or arch.qkv.layout not in (SEPARATE, SEQUENTIAL):
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

    h, kv, dh = heads_of(config)

    def keep_fused(m: nn.Module, args: tuple, out: Tensor) -> None:
        if rotating[0]:  # (B, T, (H + 2 Hkv) Dh): queries, keys and values one after another
            q, k, _ = out.detach().split([h * dh, kv * dh, kv * dh], -1)
            kept["q"], kept["k"] = q.contiguous(), k.contiguous()

    names = arch.qkv.names
    hooks = ([find(module, names[0]).register_forward_hook(keep("q")),
              find(module, names[1]).register_forward_hook(keep("k"))] if arch.qkv.layout == SEPARATE
             else [find(module, names[0]).register_forward_hook(keep_fused)])
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


def _fused(module: nn.Module, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, scaling: float | None,
           kwargs: dict) -> tuple[Tensor, Tensor]:
    """The fused kernel with the log-sum-exp, where eager attention would run: (output (B, H, Tq, Dv), lse)."""
    if query.device.type not in ("cpu", "cuda"):
        raise StoreError(f"the store's fused forward runs on the CPU or a CUDA device, not {query.device.type}")
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=query.dtype, device=mask.device).masked_fill_(~mask, float("-inf"))
    causal = mask is None and query.shape[2] > 1 and bool(getattr(module, "is_causal", True))
    mask = None if mask is None else mask[..., : key.shape[-2]]
    softcap, sinks = kwargs.get("softcap"), kwargs.get("s_aux")
    if softcap is not None or sinks is not None:  # the fused kernel cannot cap or sink: exact, in blocks of rows
        return capped_attention(query, key, value, mask, scaling, None if softcap is None else float(softcap),
                                causal, sinks)
    if query.device.type == "cuda":
        return cuda_attention(query, key, value, mask, scaling, causal)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        query, key, value, 0.0, causal, attn_mask=mask, scale=scaling)[:2]
    return out, lse


@contextmanager
def recording_hf(model: Any, arch: Architecture, chunks: Mapping[str, list[StoreChunks]] | None = None
                 ) -> Iterator[dict[str, list[AttentionInputs | None]]]:
    """For the calls this thread makes inside: per kind and layer what each attention's softmax saw, with its output
    projection's input and output; or, with `chunks`, each layer's store rows added to its chunks (the fused kernel
    runs, no weights). Hold the model's lock around it."""
    modules, projections = arch.attention(model), arch.outputs(model)
    if arch.own is not None:
        with arch.own.capturing(model, modules, projections, chunks) as own:
            yield own
        return
    if model.config._attn_implementation != STUDIO:
        raise HFModelError(f"{type(model).__name__} runs {model.config._attn_implementation} attention, not the "
                           "studio's: adopt it first")
    found: dict[str, list[AttentionInputs | None]] = {k: [None] * len(m) for k, m in modules.items()}
    tables: Tables = {}
    recorders: dict[int, Callable[..., Any]] = {}
    with ExitStack() as undo:
        for kind, mods in modules.items():
            for layer, module in enumerate(mods):
                if chunks is None:
                    kept = _before_rotation(arch, module, model.config, undo)

                    def record(m: nn.Module, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, args: tuple,
                               kwargs: dict, kind: str = kind, layer: int = layer, kept: dict = kept) -> Any:
                        found[kind][layer] = _unrotated(kept, _inputs(arch, m, q, k, v, mask, kwargs, tables))
                        return _eager(m)(m, q, k, v, mask, *args, **kwargs)
                    recorders[id(module)] = record
                else:
                    recorders[id(module)] = _storing(arch, chunks[kind][layer], projections[kind][layer], tables)
        if chunks is None:
            for handle in projection_hooks(found, projections):
                undo.callback(handle.remove)
        me = threading.get_ident()
        with _GUARD:
            if me in _CALLS:
                raise RuntimeError("a capture is already running on this thread")
            _CALLS[me] = _Call(recorders, fused=chunks is not None, config=model.config)
        undo.callback(_CALLS.pop, me, None)
        yield found


def _storing(arch: Architecture, chunks: StoreChunks, projection: nn.Module, tables: Tables) -> Callable[..., Any]:
    weight = projection_weights(projection)[0].detach()

    def record(m: nn.Module, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, args: tuple, kwargs: dict
               ) -> tuple[Tensor, None]:
        scaling = kwargs.get("scaling")
        out, lse = _fused(m, q, k, v, mask, scaling, kwargs)
        t, groups = q.shape[2], _groups(q.shape[1], k.shape[1])
        rules = replace(hf_rules(arch, m, q, dict(kwargs, scaling=scaling), tables), causal=True)
        chunks.add(q[0], k[0, :, -t:], lse[0], value_norms(v[0, :, -t:], groups, weight), rules, groups)
        return out.transpose(1, 2).contiguous(), None
    return record
