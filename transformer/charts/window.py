"""Key windows: how a long input's map fits a page width (cells shrink to a floor, then a window of keys), and the
token window a drag on a long input's overview covers."""
from __future__ import annotations

import math

MIN_MAP_CELL = 8.0  # pixels; below this a cell cannot be pointed at, so a window of keys is drawn instead


def check_window(keys: tuple[int, int] | None, n_keys: int) -> tuple[int, int]:
    """(start, stop) of a key window, 0-based and stop exclusive; None is every key. ValueError if outside."""
    if keys is None:
        return 0, n_keys
    start, stop = int(keys[0]), int(keys[1])
    if not 0 <= start < stop <= n_keys:
        raise ValueError(f"key window {start}..{stop} is not inside the {n_keys} keys (0 <= start < stop <= {n_keys})")
    return start, stop


def fit_keys(n_keys: int, cell: float, max_width: float | None, keys: tuple[int, int] | None = None,
             min_cell: float = MIN_MAP_CELL) -> tuple[float, int, int]:
    """(cell, start, stop) so the drawn keys fit `max_width` pixels: the window asked for (or every key) with cells
    shrunk as far as `min_cell` (`MIN_MAP_CELL`, or less where a page asks); past that the window is cut to what fits
    from its start."""
    start, stop = check_window(keys, n_keys)
    if max_width is None:
        return cell, start, stop
    fitting = max_width / (stop - start)
    if fitting >= cell:
        return cell, start, stop
    if fitting >= min_cell:
        return fitting, start, stop
    return min_cell, start, min(stop, start + max(1, int(max_width // min_cell)))


def keys_per_window(max_width: float) -> int:
    """How many keys a window of `max_width` pixels holds at the smallest cell (the step of a key-window slider)."""
    return max(1, int(max_width // MIN_MAP_CELL))


def window_title(start: int, stop: int, n_keys: int) -> str:
    """" · keys 101–200 of 500" (1-based) for a window, "" when every key is drawn."""
    return "" if (start, stop) == (0, n_keys) else f" · keys {start + 1}–{stop} of {n_keys}"


def drag_window(low: float, high: float, n: int, max_side: int, name: str = "region") -> tuple[int, int]:
    """(start, stop) of the token window a drag covers, from its two ends in token positions (either order): snapped
    outward to whole tokens, clipped to the `n` tokens, cut to `max_side` from its start. ValueError (one line) if
    it covers no token of the input (`name`, e.g. "rows", says which axis)."""
    low, high = sorted((float(low), float(high)))
    start = math.floor(low)
    start, stop = max(start, 0), min(max(math.ceil(high), start + 1), n)  # a drag within one token: that token
    if stop <= start:
        raise ValueError(f"the {name} {low:,.0f}–{high:,.0f} lie outside the input's {n:,} tokens (0–{n - 1:,})")
    start, stop = check_window((start, min(stop, start + max_side)), n)
    return start, stop
