"""A forward that keeps the attention store instead of maps (long inputs): the fused kernel computes each layer's
output and hands back each row's log-sum-exp, and the capture keeps the queries, keys (after RoPE), the
log-sum-exps, the value norms and the rules; nothing n x n is made.

Hugging Face decoder-only models: for the call (under the model's lock, undone in `finally`) the model's attention
implementation is switched to `studio_store`, a registered kernel that runs
`aten._scaled_dot_product_flash_attention_for_cpu` (output and log-sum-exp) where eager attention would have run,
with SDPA's masks (none for one causal prompt, so no n x n mask either); on a CUDA device its counterpart that returns
the log-sum-exp, `aten._scaled_dot_product_efficient_attention` (every float dtype, an additive mask), the rows kept
on the CPU all the same. Our decoder-only model runs its own fused
path (`need_weights=False`) with hooks that read the queries and keys, and the log-sum-exp is computed in blocks.
A prefill computes logits at its last position only (`logits_to_keep=1`).
"""
from __future__ import annotations

import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

from ..model import (
    AttentionInputs,
    AttentionStore,
    LayerStore,
    MultiHeadAttention,
    ScoreRules,
    StoreError,
    row_lse,
    value_norms,
)
from .capture import _groups, hf_rules, projection_weights, recording_native
from .falcon import check_falcon, falcon_hook, own_attention

if TYPE_CHECKING:
    from transformers import PreTrainedModel  # its stubs are not followed (pyproject): Any to mypy

STORE_IMPLEMENTATION = "studio_store"
_STORING: dict[int, Callable[..., None]] = {}  # id(attention module) -> its recorder, while a store forward runs
_REGISTERED = threading.Lock()


@dataclass
class StoreChunks:
    """A layer's store as it grows: the prefill's rows, then one row per decode step."""

    rules: ScoreRules | None = None
    groups: tuple[int, ...] = ()
    queries: list[Tensor] = field(default_factory=list)  # (H, t, Dh) each
    keys: list[Tensor] = field(default_factory=list)  # (Hkv, t, Dh) each: the new keys of each call
    lse: list[Tensor] = field(default_factory=list)  # (H, t)
    norms: list[Tensor] = field(default_factory=list)  # (H, t)

    def add(self, q: Tensor, k_new: Tensor, lse: Tensor, norms: Tensor, rules: ScoreRules, groups: tuple[int, ...]
            ) -> None:
        if rules.sinks is not None:  # the store stays on the CPU wherever the forward runs
            rules = replace(rules, sinks=rules.sinks.cpu())
        self.rules, self.groups = rules, groups
        self.queries.append(q.detach().float().cpu())
        self.keys.append(k_new.detach().float().cpu())
        self.lse.append(lse.detach().float().cpu())
        self.norms.append(norms.detach().float().cpu())

    def build(self) -> LayerStore:
        """Every row so far: queries and keys of positions 0..n-1, causal from position 0."""
        if self.rules is None:
            raise StoreError("no attention was recorded for a layer (the store forward needs the fused path)")
        return LayerStore(torch.cat(self.queries, 1), torch.cat(self.keys, 1), torch.cat(self.lse, 1),
                          replace(self.rules, offset=0), self.groups, torch.cat(self.norms, 1))


def build_store(chunks: dict[str, list[StoreChunks]]) -> AttentionStore:
    """The store of every kind and layer recorded so far."""
    return AttentionStore({kind: tuple(c.build() for c in layers) for kind, layers in chunks.items()})


def _store_attention(module: nn.Module, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor | None,
                     scaling: float | None = None, dropout: float = 0.0, **kwargs: Any) -> tuple[Tensor, None]:
    """The fused kernel with the log-sum-exp, where eager attention would run; handed to the recorder."""
    if query.device.type not in ("cpu", "cuda"):
        raise StoreError(f"the store's fused forward runs on the CPU or a CUDA device, not {query.device.type}")
    mask = attention_mask
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=query.dtype, device=mask.device).masked_fill_(~mask, float("-inf"))
    causal = mask is None and query.shape[2] > 1 and bool(getattr(module, "is_causal", True))
    softcap, sinks = kwargs.get("softcap"), kwargs.get("s_aux")
    if softcap is not None or sinks is not None:  # the fused kernel cannot cap or sink: exact, in blocks of rows
        out, lse = capped_attention(query, key, value, None if mask is None else mask[..., : key.shape[-2]],
                                    scaling, None if softcap is None else float(softcap), causal, sinks)
    elif query.device.type == "cuda":
        out, lse = cuda_attention(query, key, value, None if mask is None else mask[..., : key.shape[-2]], scaling,
                                  causal)
    else:
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, 0.0, causal, attn_mask=None if mask is None else mask[..., : key.shape[-2]],
            scale=scaling)
    recorder = _STORING.get(id(module))
    if recorder is not None:
        recorder(module, query, key, value, lse, dict(kwargs, scaling=scaling))
    return out.transpose(1, 2).contiguous(), None


def cuda_attention(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, scaling: float | None,
                   causal: bool) -> tuple[Tensor, Tensor]:
    """The CUDA fused kernel that returns the log-sum-exp (memory-efficient attention: float32 too, an additive
    mask): (output (B, H, Tq, Dv), log-sum-exp (B, H, Tq)). Grouped keys and values are repeated per query head;
    the mask is expanded to every head with its rows padded to 16 keys, the alignment the kernel reads."""
    per_group = query.shape[1] // key.shape[1]
    if per_group > 1:
        key, value = key.repeat_interleave(per_group, 1), value.repeat_interleave(per_group, 1)
    bias = None
    if mask is not None:
        tk = key.shape[-2]
        bias = torch.nn.functional.pad(mask.to(query.dtype), (0, -tk % 16))[..., :tk].expand(
            query.shape[0], query.shape[1], query.shape[2], tk)
    out, lse = torch.ops.aten._scaled_dot_product_efficient_attention(
        query, key, value, bias, True, 0.0, causal, scale=scaling)[:2]
    return out, lse[..., : query.shape[2]]  # the kernel pads the log-sum-exp's rows


def capped_attention(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, scaling: float | None,
                     softcap: float | None, causal: bool, sinks: Tensor | None = None, block: int = 512
                     ) -> tuple[Tensor, Tensor]:
    """Soft-capped attention (Gemma 2: s -> cap * tanh(s / cap), then the mask) or attention with a sink logit per
    head in the normaliser (gpt-oss), computed exactly a block of query rows at a time: (output (B, H, Tq, Dv),
    log-sum-exp (B, H, Tq), the sink's included); at most a block of rows x keys per head."""
    per_group = query.shape[1] // key.shape[1]
    k = key.repeat_interleave(per_group, 1).float()
    v = value.repeat_interleave(per_group, 1).float()
    scale = query.shape[-1] ** -0.5 if scaling is None else scaling
    tq, tk = query.shape[2], k.shape[2]
    outs, lses = [], []
    for r0 in range(0, tq, block):
        rows = slice(r0, min(r0 + block, tq))
        s = query[:, :, rows].float() @ k.transpose(-2, -1) * scale
        if softcap is not None:
            s = torch.tanh(s / softcap) * softcap
        if mask is not None:
            s = s + (mask[..., rows, :] if mask.shape[-2] > 1 else mask).float()
        elif causal:
            seen = (torch.arange(tk, device=s.device)[None, :]
                    <= torch.arange(rows.start, rows.stop, device=s.device)[:, None] + tk - tq)
            s = s.masked_fill(~seen, float("-inf"))
        lse = s.logsumexp(-1)
        if sinks is not None:
            lse = torch.logaddexp(lse, sinks.float().view(1, -1, 1).expand_as(lse))
        outs.append(torch.exp(s - lse[..., None]) @ v)
        lses.append(lse)
    return torch.cat(outs, 2).to(query.dtype), torch.cat(lses, 2)


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    with _REGISTERED:
        if STORE_IMPLEMENTATION not in AttentionInterface._global_mapping:
            AttentionMaskInterface.register(STORE_IMPLEMENTATION, sdpa_mask)
            AttentionInterface.register(STORE_IMPLEMENTATION, _store_attention)


@contextmanager
def storing_hf(model: PreTrainedModel, modules: Sequence[nn.Module], projections: Sequence[nn.Module],
               chunks: list[StoreChunks]) -> Iterator[None]:
    """For the call: `model` runs the fused store kernel and each attention module's rows go into its chunks.
    Hold the model's lock around it."""
    _register()
    config, before = model.config, model.config._attn_implementation
    tables: dict = {}
    for layer, module in enumerate(modules):
        weight = projection_weights(projections[layer])[0].detach()

        def record(m: nn.Module, q: Tensor, k: Tensor, v: Tensor, lse: Tensor, kwargs: dict,
                   layer: int = layer, weight: Tensor = weight) -> None:
            t, groups = q.shape[2], _groups(m, q.shape[1], k.shape[1])
            rules = replace(hf_rules(m, q, kwargs, tables), causal=True)
            new_v = v[0, :, -t:]
            chunks[layer].add(q[0], k[0, :, -t:], lse[0], value_norms(new_v, groups, weight), rules, groups)

        _STORING[id(module)] = record
    try:
        config._attn_implementation = STORE_IMPLEMENTATION
        yield
    finally:
        config._attn_implementation = before
        for module in modules:
            _STORING.pop(id(module), None)


@contextmanager
def storing_falcon(model: PreTrainedModel, modules: Sequence[nn.Module], projections: Sequence[nn.Module],
                   chunks: list[StoreChunks]) -> Iterator[None]:
    """Falcon (its own attention code) runs SDPA for the call, with hooks that read each layer's queries and keys
    (`falcon_inputs`); the log-sum-exp is computed in blocks. Hold the model's lock around it."""
    config, before, undo = model.config, model.config._attn_implementation, ExitStack()
    for layer, module in enumerate(modules):
        check_falcon(module)
        weight = projection_weights(projections[layer])[0].detach()

        def record(m: nn.Module, inputs: AttentionInputs, layer: int = layer, weight: Tensor = weight) -> None:
            q, k, t = inputs.queries[0], inputs.keys[0], inputs.queries.shape[2]
            rules = ScoreRules(inputs.scale, causal=True, offset=k.shape[1] - t)
            chunks[layer].add(q, k[:, -t:], row_lse(q, k, rules, inputs.groups),
                              value_norms(inputs.values[0, :, -t:], inputs.groups, weight), rules, inputs.groups)

        undo.callback(module.register_forward_hook(falcon_hook(record), with_kwargs=True).remove)
    try:
        config._attn_implementation = "sdpa"  # Falcon's fused path (its eager one makes every weight)
        yield
    finally:
        config._attn_implementation = before
        undo.close()


@contextmanager
def storing_native(modules: Sequence[MultiHeadAttention], chunks: list[StoreChunks]) -> Iterator[None]:
    """Our attention modules (run without weights: the fused SDPA path) with their rows going into the chunks;
    the log-sum-exp is computed in blocks from the queries and keys."""
    with recording_native({"self": list(modules)}, terms=False) as found:  # the rules, no (T, T) mask
        yield
        for layer, inputs in enumerate(found["self"]):
            if inputs is None:
                continue
            q, k, t = inputs.queries[0], inputs.keys[0], inputs.queries.shape[2]
            rules = ScoreRules(inputs.scale, causal=True, offset=k.shape[1] - t, window=modules[layer].window)
            weight = modules[layer].out_proj.weight.detach()
            chunks[layer].add(q, k[:, -t:], row_lse(q, k, rules, inputs.groups),
                              value_norms(inputs.values[0, :, -t:], inputs.groups, weight), rules, inputs.groups)
            found["self"][layer] = None


def _hf_parts(adapter: Any) -> tuple[list[nn.Module], list[nn.Module]]:
    from .hf_causal import _attention, _layers, causal_attention_outputs
    return [_attention(layer) for layer in _layers(adapter.model)], causal_attention_outputs(adapter.model)["self"]


def store_chunks(adapter: Any) -> dict[str, list[StoreChunks]]:
    """Empty chunks for every layer of a decoder-only model's one kind."""
    return {"self": [StoreChunks() for _ in range(adapter.head_counts()["self"][0])]}


def store_feed(adapter: Any, ids: Tensor, cache: Any, chunks: dict[str, list[StoreChunks]], n_source: int = 0
               ) -> Tensor:
    """Feed `ids` (1, t) after what `cache` holds through the fused path, the rows going into `chunks`; the logits
    (1, V) after the last id (a prefill computes no other position's logits). A Hugging Face model on a CUDA device
    runs there (the ids go to it; the logits and the store come back to the CPU)."""
    from .hf_causal import HFCausalLM
    from .native_causal import NativeDecoderOnly
    if isinstance(adapter, HFCausalLM):
        device = next(adapter.model.parameters()).device
        modules, projections = _hf_parts(adapter)
        storing = storing_falcon if own_attention(modules[0]) else storing_hf
        if storing is storing_falcon and device.type != "cpu":
            raise StoreError(f"{adapter.name}: Falcon's store forward runs on the CPU")
        with torch.no_grad(), adapter._lock, storing(adapter.model, modules, projections, chunks["self"]):
            out = adapter.model(input_ids=ids.to(device), past_key_values=cache, use_cache=True, logits_to_keep=1,
                                return_dict=True)
        return out.logits[:, -1].cpu()
    if isinstance(adapter, NativeDecoderOnly):
        if next(adapter.model.parameters()).device.type != "cpu":
            raise StoreError(f"{adapter.name}: the store forward of our models runs on the CPU")
        attentions = [layer.self_attn for layer in adapter.model.layers]
        with torch.no_grad(), storing_native(attentions, chunks["self"]):
            return adapter.model.feed(ids, cache, n_source, need_weights=False).logits
    raise StoreError(f"{adapter.name}: the store's forward reads decoder-only models "
                     "(Hugging Face causal LMs and ours)")
