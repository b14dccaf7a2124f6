"""The attention map, rows queries and columns keys, in its modes: every weight a cell (`cells`: the large heatmap and
the layer x head grid), a whole document pooled to cells of many tokens with a brush to drag a region (`overview`),
and a region's exact weights in token positions (`zoom`); `attention_map` draws the one its source allows (`modes`).
The map's modes read the same source: a short input's maps or a document's store (`analysis.attention_source`)."""
from .cells import (
    MAX_GRID_CELLS,
    ChartTooLargeError,
    attention_grid,
    attention_heatmap,
    axis_titles,
    label_angle,
    matrix_frame,
    selected_panel,
    token_font_size,
    token_labels,
    with_token_labels,
)
from .modes import attention_map
from .overview import (
    OVERVIEW_BRUSH,
    OVERVIEW_SCALES,
    Region,
    brushed_ends,
    brushed_region,
    log_floor,
    overview_chart,
    overview_frame,
)
from .zoom import REGION_MAX, tile_sizes, zoom_chart, zoom_frame, zoom_labelled, zoom_spec, zoom_tokens

__all__ = [
    "MAX_GRID_CELLS",
    "OVERVIEW_BRUSH",
    "OVERVIEW_SCALES",
    "REGION_MAX",
    "ChartTooLargeError",
    "Region",
    "attention_grid",
    "attention_heatmap",
    "attention_map",
    "axis_titles",
    "brushed_ends",
    "brushed_region",
    "label_angle",
    "log_floor",
    "matrix_frame",
    "overview_chart",
    "overview_frame",
    "selected_panel",
    "tile_sizes",
    "token_font_size",
    "token_labels",
    "with_token_labels",
    "zoom_chart",
    "zoom_frame",
    "zoom_labelled",
    "zoom_spec",
    "zoom_tokens",
]
