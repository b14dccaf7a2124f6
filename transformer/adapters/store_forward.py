"""A forward that keeps the attention store instead of maps (long inputs): the fused kernel computes each layer's
output and hands back each row's log-sum-exp, and the capture keeps the queries, keys (after RoPE), the
log-sum-exps, the value norms and the rules; nothing n x n is made. This module holds the store's growing chunks, the
fused kernels that return the log-sum-exp and our models' store capture; a Hugging Face model's is the registered
`studio` kernel (`hf_capture`), each adapter's `store_feed` runs the call (`InspectableModel.capturing`).

On the CPU the kernel is `aten._scaled_dot_product_flash_attention_for_cpu` (output and log-sum-exp), with SDPA's
masks (none for one causal prompt, so no n x n mask either); on a CUDA device its counterpart that returns the
log-sum-exp, `aten._scaled_dot_product_efficient_attention` (every float dtype, an additive mask), the rows kept on
the CPU all the same. Our decoder-only model runs its own fused path (`need_weights=False`) with hooks that read the
queries and keys, and the log-sum-exp is computed in blocks. A prefill computes logits at its last position only.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

import torch
from torch import Tensor

from ..model import AttentionStore, LayerStore, MultiHeadAttention, ScoreRules, StoreError, row_lse, value_norms
from .capture import recording_native


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


def store_chunks(adapter: Any) -> dict[str, list[StoreChunks]]:
    """Empty chunks for every layer of a decoder-only model's one kind."""
    return {"self": [StoreChunks() for _ in range(adapter.head_counts()["self"][0])]}
