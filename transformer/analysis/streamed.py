"""Summaries of a layer's attention in one streamed pass over its store: query blocks x key blocks, every head at
once, with a fixed memory bound (a block of weights per head, whatever the input's length). Per head: each row's
entropy, peak weight, mass on the first token, on the special tokens and in a local window, each key's column sum,
each row's top keys, and a pooled overview (max or mean of the weights in each cell of a grid)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor

from ..model import AttentionStore

BLOCK = 512  # rows and keys per block of the pass


@dataclass(frozen=True)
class LayerSummaries:
    """One layer's summaries, every head: rows are the store's query rows, keys its keys."""

    entropy: Tensor  # (H, Q) nats
    peak: Tensor  # (H, Q) the largest weight of each row
    first: Tensor  # (H, Q) weight on key 0
    specials: Tensor  # (H, Q) weight on the special keys named
    local: Tensor  # (H, Q) weight on keys within `window` positions of the query
    column_sums: Tensor  # (H, K) each key's weight summed over rows
    top_keys: Tensor  # (H, Q, k) the k heaviest keys of each row, heaviest first
    top_weights: Tensor  # (H, Q, k)
    overview: Tensor  # (H, R, C) each cell's max or mean weight
    window: int
    pool: str


def _bins(n: int, cells: int) -> Tensor:
    return torch.arange(n) * cells // n


def summarise_layer(store: AttentionStore, kind: str, layer: int, *, top_k: int = 5, window: int = 8,
                    specials: Sequence[int] = (), resolution: int = 256, pool: str = "max", block: int = BLOCK,
                    progress: Callable[[float], None] | None = None) -> LayerSummaries:
    """Every summary of one layer in one blocked pass (see the module's docstring); `resolution` caps the
    overview's rows and columns; `progress(fraction)` is called after each query block."""
    if pool not in ("max", "mean"):
        raise ValueError(f"pool is 'max' or 'mean', not {pool!r}")
    one = store.layer(kind, layer)
    h, q, k = one.n_heads, one.n_rows, one.n_keys
    heads, rules = torch.arange(h), one.rules
    rows_out, cols_out = min(q, resolution), min(k, resolution)
    row_bin, key_bin = _bins(q, rows_out), _bins(k, cols_out)
    special = torch.zeros(k, dtype=torch.bool)
    special[[s for s in specials if 0 <= s < k]] = True
    entropy, peak, first, spec, local = (torch.zeros(h, q) for _ in range(5))
    columns = torch.zeros(h, k)
    kk = min(top_k, k)
    top_w, top_i = torch.full((h, q, kk), -1.0), torch.zeros(h, q, kk, dtype=torch.long)
    overview = torch.zeros(h, rows_out * cols_out)
    counts = torch.zeros(rows_out * cols_out)
    for r0 in range(0, q, block):
        rows = torch.arange(r0, min(r0 + block, q))
        qpos = rows + rules.offset
        for k0 in range(0, k, block):
            keys = torch.arange(k0, min(k0 + block, k))
            cells = (row_bin[rows][:, None] * cols_out + key_bin[keys][None, :]).reshape(-1)
            counts.index_add_(0, cells, torch.ones(cells.numel()))
            if rules.block_unseen(r0, int(rows[-1]), k0, int(keys[-1])):
                continue
            w = one.weights(heads, rows, keys)  # (H, r, c)
            entropy[:, rows] -= torch.special.xlogy(w, w).sum(-1)
            peak[:, rows] = torch.maximum(peak[:, rows], w.amax(-1))
            if k0 == 0:
                first[:, rows] += w[:, :, 0]
            spec[:, rows] += w[:, :, special[keys]].sum(-1)
            near = (qpos[:, None] - keys[None, :]).abs() < window
            local[:, rows] += (w * near).sum(-1)
            columns[:, keys] += w.sum(1)
            bw, bi = w.topk(min(kk, len(keys)), dim=-1)
            both_w, both_i = torch.cat([top_w[:, rows], bw], -1), torch.cat([top_i[:, rows], bi + k0], -1)
            top_w[:, rows], pick = both_w.topk(kk, dim=-1)
            top_i[:, rows] = both_i.gather(-1, pick)
            flat = w.reshape(h, -1)
            if pool == "max":
                overview.scatter_reduce_(1, cells[None].expand(h, -1), flat, "amax")
            else:
                overview.index_add_(1, cells, flat)
        if progress is not None:
            progress(min(r0 + block, q) / q)
    if pool == "mean":
        overview = overview / counts.clamp(min=1)
    return LayerSummaries(entropy, peak, first, spec, local, columns, top_i, top_w.clamp(min=0),
                          overview.view(h, rows_out, cols_out), window, pool)


def summarise(store: AttentionStore, kind: str, **options) -> tuple[LayerSummaries, ...]:
    """`summarise_layer` for every layer of a kind (options as there)."""
    return tuple(summarise_layer(store, kind, layer, **options) for layer in range(len(store.layers[kind])))
