"""A long input's replay page, one self-contained HTML file, offline (the dense replay would hold n x n weights): for
the layer shown, each head's overview of the whole input (the max of each cell, from the streamed summaries), the
region shown with its weights recomputed exactly from the store (every head; a region wider than TILE_SIDE cells a
side is kept as the max of each cell), and each decode step's row over every key (max-pooled to STRIP_BINS bins) with
its top keys named; within MAX_REPLAY_BYTES. Weights travel as integer thousandths, user text in an escaped JSON
block."""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import torch

from ..analysis import STRIP_BINS, TILE_SIDE, LayerSummaries, attention_source, pool_row, pool_tile, summarise_layer
from ..decode import DecodeResult
from .replay_bundle import MAX_REPLAY_BYTES, WEIGHT_SCALE, ReplayTooLargeError, script_json, vega_bundle
from .replay_bundle import replay_steps as _steps
from .style import visible_token

Region = tuple[int, int, int, int]  # first row, end row, first key, end key (ends excluded)
OVERVIEW_CELLS = 96  # the overview's cells a side (as the app's document view)
TOP_KEYS = 5
SOURCE_CHARS = 2000  # the input shown in the page's header (the page holds every token anyway)
_PAGE = Path(__file__).with_name("replay_page.html")  # one template: its document mode


def _ints(weights: torch.Tensor) -> list:
    return (weights.detach().float().cpu() * WEIGHT_SCALE).round().to(torch.int32).tolist()


def check_region(n_rows: int, n_keys: int, region: tuple[int, int, int, int]) -> None:
    """Raise ValueError (one line) for a region (first row, end row, first key, end key) outside the input."""
    r0, r1, k0, k1 = region
    if not (0 <= r0 < r1 <= n_rows and 0 <= k0 < k1 <= n_keys):
        raise ValueError(f"the region rows {r0:,}–{r1:,} × keys {k0:,}–{k1:,} is outside the input (rows 0–{n_rows:,}, "
                         f"keys 0–{n_keys:,})")


def long_replay_size(n_heads: int, n_steps: int, n_tokens: int, region: tuple[int, int, int, int]) -> int:
    """Bytes the page takes at least (a stored weight takes at least "0,"): the Vega code, the overviews, the
    region, the step strips, the tokens."""
    r0, r1, k0, k1 = region
    cells = (min(r1 - r0, TILE_SIDE) * min(k1 - k0, TILE_SIDE) + OVERVIEW_CELLS ** 2
             + n_steps * min(n_tokens, STRIP_BINS))
    return 900_000 + 2 * n_heads * cells + 4 * n_tokens


def long_replay_data(result: DecodeResult, model_name: str, *, layer: int, region: tuple[int, int, int, int],
                     weights: str = "", summaries: LayerSummaries | None = None) -> dict[str, Any]:
    """Everything the long replay page draws (see the module's docstring); `region` is (first row, end row, first
    key, end key) of the zoom shown, `summaries` the layer's (computed here when not given)."""
    source = attention_source(result.trace)  # a document's store (or a short input's maps: the same numbers)
    n_layers, n_heads, n_rows, n_keys = source.shape("self")
    if not 0 <= layer < n_layers:
        raise IndexError(f"self has {n_layers} layer(s); layer {layer} does not exist")
    check_region(n_rows, n_keys, region)
    size = long_replay_size(n_heads, len(result.steps), n_keys, region)
    if size > MAX_REPLAY_BYTES:
        raise ReplayTooLargeError(f"This replay would take at least {size / 1e6:.1f} MB; a replay file holds at most "
                                  f"{MAX_REPLAY_BYTES / 1e6:g} MB. Zoom to a smaller region.")
    if summaries is None:
        summaries = summarise_layer(source, "self", layer, resolution=OVERVIEW_CELLS)
    heads = torch.arange(n_heads)
    r0, r1, k0, k1 = region
    tile, rb, kb = pool_tile(source.block("self", layer, heads, torch.arange(r0, r1), torch.arange(k0, k1))[0],
                             TILE_SIDE)
    offset = result.trace.step_offset
    step_rows = torch.arange(offset, min(offset + len(result.steps), n_rows))
    rows = source.block("self", layer, heads, step_rows, torch.arange(n_keys))[0]  # (H, steps, K): a row per step
    strips = pool_row(rows)  # (H, steps, bins)
    bins = strips.shape[-1]
    top = rows.topk(min(TOP_KEYS, n_keys), dim=-1)
    grid = summaries.overview
    text = result.source_text
    return {
        "model": model_name, "weights": weights, "output": result.output_text, "finished": result.finished,
        "source": text[:SOURCE_CHARS] + ("…" if len(text) > SOURCE_CHARS else ""),
        "steps": _steps(result), "layer": layer, "layers": n_layers, "heads": n_heads,
        "rows": n_rows, "keys": n_keys, "offset": offset,
        "tokens": [visible_token(t) for t in result.trace.decoder_input_tokens],
        "overview": {"row_cell": -(-n_rows // grid.shape[1]), "key_cell": -(-n_keys // grid.shape[2]),
                     "values": _ints(grid)},
        "region": {"r0": r0, "r1": r1, "k0": k0, "k1": k1, "row_cell": rb, "key_cell": kb, "values": _ints(tile)},
        "strips": {"bin": n_keys / bins, "values": _ints(strips.transpose(0, 1))},  # [step][head][bin]
        "top": [[[[int(k), round(float(w), 4)] for w, k in zip(top.values[h, s], top.indices[h, s], strict=True)]
                 for h in range(n_heads)] for s in range(len(step_rows))],
    }


def long_replay_html(result: DecodeResult, model_name: str, *, layer: int, region: tuple[int, int, int, int],
                     weights: str = "", summaries: LayerSummaries | None = None) -> str:
    """One self-contained HTML page replaying a long input's decode offline (see the module's docstring): Prev/Next
    and the arrow keys step through the decode steps, a picker chooses the head. Raises ReplayTooLargeError past
    MAX_REPLAY_BYTES and ValueError for a region outside the input."""
    data = long_replay_data(result, model_name, layer=layer, region=region, weights=weights, summaries=summaries)
    title = f"Replay · {model_name} · {len(data['tokens']):,} tokens"
    parts = {"title": html.escape(visible_token(title[:200])), "data": script_json(data), "vega": vega_bundle()}
    page = re.sub(r"\{\{(title|data|vega)\}\}", lambda m: parts[m.group(1)], _PAGE.read_text(encoding="utf-8"))
    size = len(page.encode("utf-8"))
    if size > MAX_REPLAY_BYTES:
        raise ReplayTooLargeError(f"This replay takes {size / 1e6:.1f} MB; a replay file holds at most "
                                  f"{MAX_REPLAY_BYTES / 1e6:g} MB. Zoom to a smaller region.")
    return page
