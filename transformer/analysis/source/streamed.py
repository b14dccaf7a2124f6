"""Summaries of a layer's attention in one streamed pass over its source (`attention_source`: the captured maps of
a short input, one block, or the attention store of a long one): query blocks x key blocks, every head at once, with
a fixed memory bound (a block of weights per head, whatever the input's length). Per head: each row's entropy, peak
weight, mass on the first token, on the special tokens and in a local window, its distance from the diagonal, each
key's column sum, each row's top keys, and a pooled overview (max or mean of the weights in each cell of a grid);
`with_mean` adds the mean-of-heads map as one more head. The store stays where it is (the CPU); `device` (a GPU) is
where the blocks are computed and the summaries gathered, which come back to the CPU at the end."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor

from ...decode import AttentionTrace
from ...model import AttentionStore
from .attention_source import AttentionSource, attention_source

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
    distance: Tensor  # (H, Q) the weighted mean |key - diagonal| of each row (the diagonal scaled by `scaled`)
    overview: Tensor  # (H, R, C) each cell's max or mean weight; cells of ceil(Q / resolution) rows, ceil(K / ...) keys
    window: int
    pool: str
    with_mean: bool = False  # the last head is the mean of the heads' maps


Readable = AttentionSource | AttentionStore | AttentionTrace  # what `attention_source` takes


def summarise_layer(source: Readable, kind: str, layer: int, *, top_k: int = 5, window: int = 8,
                    specials: Sequence[int] = (), resolution: int = 256, pool: str = "max", block: int = BLOCK,
                    progress: Callable[[float], None] | None = None, device: torch.device | str | None = None,
                    heads: Sequence[int] | None = None, with_mean: bool = False,
                    scaled: bool = False) -> LayerSummaries:
    """Every summary of one layer in one blocked pass (see the module's docstring); `resolution` caps the
    overview's rows and columns (cells of equal size, the last ones smaller); `progress(fraction)` is called after
    each query block; `device` is where the pass runs (None: the store's), the summaries come back to the CPU;
    `heads` (default every head) are the heads summarised, in that order (one head first: a view's current head,
    at 1/H of the cost); `with_mean` appends the mean of the heads' maps as the last head (every head picked);
    `scaled`: the diagonal runs from the first row and key to the last (cross-attention), else it is the query's
    position."""
    if pool not in ("max", "mean"):
        raise ValueError(f"pool is 'max' or 'mean', not {pool!r}")
    src = attention_source(source)
    n_layers, n_heads, q, k = src.shape(kind)
    if not 0 <= layer < n_layers:
        raise IndexError(f"{kind} has {n_layers} layer(s); layer {layer} does not exist")
    offset = src.offset(kind, layer)
    picked = torch.arange(n_heads) if heads is None else torch.as_tensor(heads, dtype=torch.long).reshape(-1)
    if picked.numel() == 0 or int(picked.min()) < 0 or int(picked.max()) >= n_heads:
        raise IndexError(f"{kind} layer {layer} has heads 0-{n_heads - 1}; asked for {picked.tolist()}")
    if with_mean and len(picked) != n_heads:
        raise ValueError("the mean of heads needs every head picked")
    h = len(picked) + int(with_mean)
    dev = torch.device("cpu") if device is None else torch.device(device)
    stretch = (k - 1) / (q - 1) if scaled and q > 1 else (0.0 if scaled else 1.0)  # the diagonal's key per row
    rb, kb = -(-q // resolution), -(-k // resolution)  # rows and keys per overview cell (the last cells: fewer)
    rows_out, cols_out = -(-q // rb), -(-k // kb)
    row_block, key_block = max(block // rb, 1) * rb, max(block // kb, 1) * kb  # blocks of whole cells
    special = torch.zeros(k, dtype=torch.bool, device=dev)
    special[[s for s in specials if 0 <= s < k]] = True
    entropy, peak, first, spec, local, distance = (torch.zeros(h, q, device=dev) for _ in range(6))
    columns = torch.zeros(h, k, device=dev)
    kk = min(top_k, k)
    top_w, top_i = torch.full((h, q, kk), -1.0, device=dev), torch.zeros(h, q, kk, dtype=torch.long, device=dev)
    grid = torch.zeros(h, rows_out, cols_out, device=dev)
    for r0 in range(0, q, row_block):
        rows = torch.arange(r0, min(r0 + row_block, q), device=dev)
        qpos, r_cells = rows + offset, slice(r0 // rb, -(-(r0 + len(rows)) // rb))
        rs = slice(r0, r0 + len(rows))  # the accumulators' rows as a view
        diagonal = (rows.float() * stretch if scaled else qpos.float())[:, None]
        for k0 in range(0, k, key_block):
            keys = torch.arange(k0, min(k0 + key_block, k), device=dev)
            ks = slice(k0, k0 + len(keys))  # the accumulators' keys as a view (an index per block was slow)
            if src.block_unseen(kind, layer, r0, int(rows[-1]), k0, int(keys[-1])):
                continue
            w, log_w = src.block(kind, layer, picked, rows, keys, dev)  # (H, r, c): weights (and their logs)
            plogp = w * log_w if log_w is not None else torch.special.xlogy(w, w)
            if with_mean:
                mean = w.mean(0, keepdim=True)
                w, plogp = torch.cat([w, mean]), torch.cat([plogp, torch.special.xlogy(mean, mean)])
            entropy[:, rs] -= plogp.sum(-1)
            distance[:, rs] += (w * (keys.float()[None, :] - diagonal).abs()).sum(-1)
            padded = torch.nn.functional.pad(w, (0, -len(keys) % kb))  # whole key cells (weights >= 0: pad 0)
            part = padded.view(h, len(rows), -1, kb)
            part = part.amax(-1) if pool == "max" else part.sum(-1)  # (H, r, key cells)
            block_peak = part.amax(-1) if pool == "max" else w.amax(-1)
            peak[:, rs] = torch.maximum(peak[:, rs], block_peak)
            if k0 == 0:
                first[:, rs] += w[:, :, 0]
            if bool(special[ks].any()):
                spec[:, rs] += w[:, :, special[ks]].sum(-1)
            if max(int(qpos[0]) - int(keys[-1]), k0 - int(qpos[-1]), 0) < window:  # the block meets the local band
                near = (qpos[:, None] - keys[None, :]).abs() < window
                local[:, rs] += (w * near).sum(-1)
            columns[:, ks] += w.sum(1)
            better = (block_peak > top_w[:, rs, -1]).any(0)  # rows where a key here can enter the top k
            if bool(better.all()):  # every row (a first block): views, no gather
                sub: slice | Tensor = rs
                bw, bi = w.topk(min(kk, len(keys)), dim=-1)
            elif bool(better.any()):
                picked_rows = better.nonzero().view(-1)
                sub = rows[picked_rows]
                bw, bi = w.index_select(1, picked_rows).topk(min(kk, len(keys)), dim=-1)
            if bool(better.any()):
                both_w, both_i = torch.cat([top_w[:, sub], bw], -1), torch.cat([top_i[:, sub], bi + k0], -1)
                top_w[:, sub], pick = both_w.topk(kk, dim=-1)
                top_i[:, sub] = both_i.gather(-1, pick)
            part = torch.nn.functional.pad(part, (0, 0, 0, -len(rows) % rb)).view(h, -1, rb, part.shape[-1])
            k_cells = slice(k0 // kb, k0 // kb + part.shape[-1])
            if pool == "max":
                grid[:, r_cells, k_cells] = torch.maximum(grid[:, r_cells, k_cells], part.amax(2))
            else:
                grid[:, r_cells, k_cells] += part.sum(2)
        if progress is not None:
            progress(min(r0 + row_block, q) / q)
    if pool == "mean":
        row_n = torch.full((rows_out,), float(rb), device=dev)
        row_n[-1] = q - rb * (rows_out - 1)
        key_n = torch.full((cols_out,), float(kb), device=dev)
        key_n[-1] = k - kb * (cols_out - 1)
        grid = grid / (row_n[:, None] * key_n[None, :])
    return LayerSummaries(entropy.cpu(), peak.cpu(), first.cpu(), spec.cpu(), local.cpu(), columns.cpu(),
                          top_i.cpu(), top_w.clamp(min=0).cpu(), distance.cpu(), grid.cpu(), window, pool,
                          with_mean)


def summarise(source: Readable, kind: str, **options) -> tuple[LayerSummaries, ...]:
    """`summarise_layer` for every layer of a kind (options as there)."""
    src = attention_source(source)
    return tuple(summarise_layer(src, kind, layer, **options) for layer in range(src.shape(kind)[0]))
