"""How large a map may be drawn beside its side column: its plotting area, token labels and colour legend within the
column's width at a 1280-px window (the sidebar open, or presenter mode's screen beside the QR code), and on a
projector its rows within 1280x720's first screen."""
from __future__ import annotations

from typing import Any

from transformer.charts import keys_per_window, text_width, visible_token
from transformer.decode import AttentionTrace

MAP_COLUMN_PX = 424  # the map's column beside its side column (3:2 or 9:6) in the 760-px main block at 1280 px
PRESENTED_COLUMN_PX = 540  # ... in presenter mode (no sidebar; the QR code's margin; Decode's 11:9 the narrower)
BOX_INSET_PX = 34  # a bordered box's padding and border on both sides (Home's Try it)
MAP_FRAME_PX = 112  # beside the plot and its token labels: the axis title, the colour legend and the paddings
LABEL_LIMIT_PX = 120  # the charts cut a vertical axis's token label at this width
PRESENTED_ROWS_PX = 340  # presenter mode: the rows a map may take so its last row and axis end above 720 px
FIRST_SCREEN_ROWS_PX = 260  # Decode beside its side column (sidebar open): its rows and key axis end above 720 px
LABELLED_CELL, BARE_CELL = 12.0, 8.0  # pixels: the smallest cell whose token labels do not overprint; the charts' floor
# (labels left off, each token in its tooltip)
PRESENTED_KEY_CELL = 5.0  # presenter mode: columns this narrow keep a long input's map beside its side column (Prev,
# Next and the output card on the first screen: at 8 px a 60-character prompt's map pushed them under it)


def label_px(trace: AttentionTrace, kind: str, large: bool = False) -> float:
    """The widest query token label as drawn (11 px type; 18 px on a projector), at most the charts' limit."""
    font = 18 if large else 11
    widths = [text_width(visible_token(t), font) for t in trace.labels(kind)[0]]
    return min(LABEL_LIMIT_PX, max(widths, default=0.0))


def column_room(trace: AttentionTrace, kind: str, presenting: bool = False, inset: int = 0) -> int:
    """Pixels the plotting area of a map of this kind may take beside its side column (`inset`: pixels the column
    loses to a bordered box around it)."""
    column = PRESENTED_COLUMN_PX if presenting else MAP_COLUMN_PX
    return int(column - inset - MAP_FRAME_PX - label_px(trace, kind, presenting))


def fits_column(trace: AttentionTrace, kind: str, presenting: bool = False) -> bool:
    """Whether every key of this kind fits beside the side column at the smallest pointable cell (`presenting`: the
    wider column of presenter mode, whose first screen holds the map and its side column side by side, at columns as
    narrow as PRESENTED_KEY_CELL)."""
    room = column_room(trace, kind, presenting)
    fitting = int(room // PRESENTED_KEY_CELL) if presenting else keys_per_window(room)
    return trace.axis_sizes(kind)[1] <= fitting


def map_fit(trace: AttentionTrace, kind: str, size: int, page_width: int, keys: tuple[int, int] | None = None, *,
            presenting: bool = False, rows_px: int | None = None, inset: int = 0) -> dict[str, Any]:
    """`size`, `max_width`, `row_height` and `min_cell` for `attention_heatmap`: a map beside a side column fits that
    column with its token labels and legend, one with the page's width keeps `page_width`; on a projector (or given
    `rows_px`) the cells also shrink (to LABELLED_CELL, past that to BARE_CELL without labels) until the rows fit
    PRESENTED_ROWS_PX (or `rows_px`), and rows that still do not fit (more than ~42 on a projector) are drawn lower
    than their cells are wide (`row_height`), so the map's last row stays on the screen; on a projector a map beside
    its side column keeps every key with columns down to PRESENTED_KEY_CELL (`min_cell`); `inset`: pixels the map's
    column loses to a bordered box around it."""
    n_rows, n_keys = trace.axis_sizes(kind)
    shown = n_keys if keys is None else keys[1] - keys[0]
    width, row_height, min_cell = page_width, None, BARE_CELL
    if fits_column(trace, kind, presenting):
        width = column_room(trace, kind, presenting, inset)
        size = min(size, width)
        min_cell = PRESENTED_KEY_CELL if presenting else BARE_CELL
    if presenting or rows_px is not None:
        rows = PRESENTED_ROWS_PX if presenting else rows_px or PRESENTED_ROWS_PX
        cell = rows / max(n_rows, 1)
        if cell < BARE_CELL:
            row_height = max(1, int(cell))  # whole pixels: fractional rows show seams between them
        cell = cell if cell >= LABELLED_CELL else BARE_CELL
        width = min(width, int(cell * shown))
        size = min(size, int(cell * max(n_rows, shown)))
    return {"size": size, "max_width": width, "row_height": row_height, "min_cell": min_cell}
