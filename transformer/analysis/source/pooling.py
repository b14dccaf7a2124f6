"""Row and tile pooling, once for every view: a row over every key pooled to at most `STRIP_BINS` bins (max, or the
mean for a signed difference), and a tile pooled to cells of at most `side` a side (the max of each cell), with
where each bin or cell starts in token positions. A pooled cell's value is the max (or mean) of the exact weights it
covers, never an estimate."""
from __future__ import annotations

import torch
from torch import Tensor

STRIP_BINS = 512  # a row over every key is drawn as at most this many bins
TILE_SIDE = 256  # a zoomed tile is drawn as at most this many cells a side


def pool_row(row: Tensor, bins: int = STRIP_BINS, how: str = "max") -> Tensor:
    """(..., K) -> (..., min(bins, K)): each bin the max (`how="max"`) or mean (`"mean"`) of its keys; bin i covers
    keys floor(i K / B) to ceil((i + 1) K / B) (torch's adaptive pooling)."""
    if how not in ("max", "mean"):
        raise ValueError(f"how is 'max' or 'mean', not {how!r}")
    n = row.shape[-1]
    flat = row.reshape(-1, 1, n).float()
    pool = torch.nn.functional.adaptive_max_pool1d if how == "max" else torch.nn.functional.adaptive_avg_pool1d
    return pool(flat, min(bins, n)).reshape(*row.shape[:-1], -1)


def bin_starts(n_keys: int, n_bins: int) -> list[int]:
    """The first key of each of `n_bins` bins over `n_keys` keys, as a strip labels them."""
    size = n_keys / n_bins
    return [int(i * size) for i in range(n_bins)]


def pool_tile(w: Tensor, side: int = TILE_SIDE) -> tuple[Tensor, int, int]:
    """(..., r, k) weights as the max of cells of (rb, kb) rows and keys, at most `side` cells a side (the last
    cells smaller), and (rb, kb); a tile within `side` comes back as it is."""
    rb, kb = -(-w.shape[-2] // side), -(-w.shape[-1] // side)
    if rb * kb == 1:
        return w, 1, 1
    lead = w.shape[:-2]
    cells = torch.nn.functional.max_pool2d(w.reshape(-1, *w.shape[-2:]).float(), (rb, kb), ceil_mode=True)
    return cells.reshape(*lead, *cells.shape[-2:]), rb, kb
