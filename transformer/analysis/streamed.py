"""Summaries of a layer's attention in one streamed pass over its store: query blocks x key blocks, every head at
once, with a fixed memory bound (a block of weights per head, whatever the input's length). Per head: each row's
entropy, peak weight, mass on the first token, on the special tokens and in a local window, each key's column sum,
each row's top keys, and a pooled overview (max or mean of the weights in each cell of a grid). The store stays
where it is (the CPU); `device` (a GPU) is where the blocks are computed and the summaries gathered, which come back
to the CPU at the end."""
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
    overview: Tensor  # (H, R, C) each cell's max or mean weight; cells of ceil(Q / resolution) rows, ceil(K / ...) keys
    window: int
    pool: str


def summarise_layer(store: AttentionStore, kind: str, layer: int, *, top_k: int = 5, window: int = 8,
                    specials: Sequence[int] = (), resolution: int = 256, pool: str = "max", block: int = BLOCK,
                    progress: Callable[[float], None] | None = None, device: torch.device | str | None = None,
                    heads: Sequence[int] | None = None) -> LayerSummaries:
    """Every summary of one layer in one blocked pass (see the module's docstring); `resolution` caps the
    overview's rows and columns (cells of equal size, the last ones smaller); `progress(fraction)` is called after
    each query block; `device` is where the pass runs (None: the store's), the summaries come back to the CPU;
    `heads` (default every head) are the heads summarised, in that order (one head first: a view's current head,
    at 1/H of the cost)."""
    if pool not in ("max", "mean"):
        raise ValueError(f"pool is 'max' or 'mean', not {pool!r}")
    one = store.layer(kind, layer)
    q, k, rules = one.n_rows, one.n_keys, one.rules
    picked = torch.arange(one.n_heads) if heads is None else torch.as_tensor(heads, dtype=torch.long).reshape(-1)
    if picked.numel() == 0 or int(picked.min()) < 0 or int(picked.max()) >= one.n_heads:
        raise IndexError(f"{kind} layer {layer} has heads 0-{one.n_heads - 1}; asked for {picked.tolist()}")
    h = len(picked)
    dev = one.queries.device if device is None else torch.device(device)
    rb, kb = -(-q // resolution), -(-k // resolution)  # rows and keys per overview cell (the last cells: fewer)
    rows_out, cols_out = -(-q // rb), -(-k // kb)
    row_block, key_block = max(block // rb, 1) * rb, max(block // kb, 1) * kb  # blocks of whole cells
    special = torch.zeros(k, dtype=torch.bool, device=dev)
    special[[s for s in specials if 0 <= s < k]] = True
    entropy, peak, first, spec, local = (torch.zeros(h, q, device=dev) for _ in range(5))
    columns = torch.zeros(h, k, device=dev)
    kk = min(top_k, k)
    top_w, top_i = torch.full((h, q, kk), -1.0, device=dev), torch.zeros(h, q, kk, dtype=torch.long, device=dev)
    grid = torch.zeros(h, rows_out, cols_out, device=dev)
    for r0 in range(0, q, row_block):
        rows = torch.arange(r0, min(r0 + row_block, q), device=dev)
        qpos, r_cells = rows + rules.offset, slice(r0 // rb, -(-(r0 + len(rows)) // rb))
        for k0 in range(0, k, key_block):
            keys = torch.arange(k0, min(k0 + key_block, k), device=dev)
            if rules.block_unseen(r0, int(rows[-1]), k0, int(keys[-1])):
                continue
            log_w = one.scores(picked, rows, keys, dev) - one.lse_rows(picked, rows, dev)  # (H, r, c): log weights
            torch.nan_to_num_(log_w, nan=-1e4, neginf=-1e4)  # hidden keys (and rows that see nothing): weight 0
            w = torch.exp(log_w)
            entropy[:, rows] -= (w * log_w).sum(-1)
            padded = torch.nn.functional.pad(w, (0, -len(keys) % kb))  # whole key cells (weights >= 0: pad 0)
            part = padded.view(h, len(rows), -1, kb)
            part = part.amax(-1) if pool == "max" else part.sum(-1)  # (H, r, key cells)
            block_peak = part.amax(-1) if pool == "max" else w.amax(-1)
            peak[:, rows] = torch.maximum(peak[:, rows], block_peak)
            if k0 == 0:
                first[:, rows] += w[:, :, 0]
            if bool(special[keys].any()):
                spec[:, rows] += w[:, :, special[keys]].sum(-1)
            if max(int(qpos[0]) - int(keys[-1]), k0 - int(qpos[-1]), 0) < window:  # the block meets the local band
                near = (qpos[:, None] - keys[None, :]).abs() < window
                local[:, rows] += (w * near).sum(-1)
            columns[:, keys] += w.sum(1)
            better = (block_peak > top_w[:, rows, -1]).any(0)  # rows where a key here can enter the top k
            if bool(better.any()):
                sub = rows[better]
                bw, bi = w[:, better].topk(min(kk, len(keys)), dim=-1)
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
                          top_i.cpu(), top_w.clamp(min=0).cpu(), grid.cpu(), window, pool)


def summarise(store: AttentionStore, kind: str, **options) -> tuple[LayerSummaries, ...]:
    """`summarise_layer` for every layer of a kind (options as there)."""
    return tuple(summarise_layer(store, kind, layer, **options) for layer in range(len(store.layers[kind])))
