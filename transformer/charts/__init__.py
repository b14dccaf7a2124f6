"""The charts stage: pure functions from traces and frames to Altair / Plotly figures (no Streamlit)."""
import altair as alt

# Altair refuses to serialise more than 5,000 rows by default; a 20-word caption's head grid has ~10^4-10^5.
# Our builders cap what they draw themselves (attention.MAX_GRID_CELLS raises ChartTooLargeError, which pages
# show as a message), so that limit only turned ordinary inputs into exceptions.
alt.data_transformers.disable_max_rows()

from .ablation import agreement_chart, importance_chart, step_probability_chart
from .aggregates import aggregate_heatmap, aggregate_title
from .animation import (
    MAX_ANIMATION_FRAMES,
    SECONDS_PER_FRAME,
    AnimationError,
    Slide,
    animated_kind,
    animation_bytes,
    decode_slides,
    training_slides,
)
from .attention import (
    OVERVIEW_BRUSH,
    OVERVIEW_SCALES,
    REGION_MAX,
    ChartTooLargeError,
    Region,
    attention_grid,
    attention_heatmap,
    attention_map,
    brushed_ends,
    brushed_region,
    label_angle,
    log_floor,
    overview_chart,
    overview_frame,
    selected_panel,
    tile_sizes,
    zoom_chart,
    zoom_frame,
    zoom_labelled,
    zoom_spec,
    zoom_tokens,
)
from .beam import (
    BEAM_NODE,
    MAX_NODE_KEYS,
    beam_frame,
    beam_tree_chart,
    clicked_beam_node,
    keys_that_fit,
    node_attention_chart,
    tree_window,
)
from .beam import key_window as beam_key_window
from .circuits import CIRCUIT_NODE, MAX_DRAWN, circuit_chart, faithfulness_chart, node_layout
from .dictionaries import decile_chart, feature_pairs_chart, feature_pairs_frame, feature_sources_chart
from .difference import difference_frame, difference_heatmap
from .edit_difference import (
    EDIT_WINDOW,
    aligned_difference_frame,
    aligned_difference_heatmap,
    edit_window,
    head_movement_heatmap,
)
from .export import ChartExportError, chart_to_png, chart_to_svg
from .finder import FINDER_SELECTION, finder_points, head_finder_chart
from .head_computation import KEY_WINDOW as STAGE_KEY_WINDOW
from .head_computation import STAGES, contribution_heatmap, heads_row_chart, mask_picture, stage_charts, top_dimensions
from .head_computation import key_window as stage_key_window
from .head_page import LAYER_STATISTICS, head_page_charts, head_page_html, layer_frame
from .heads import alignment_table_chart
from .inline_html import INLINE_RENDERER, enable_inline_renderer, inline_chart_html, read_inline_chart
from .lens import LENS_CELL, MAX_GRID_STEPS, clicked_lens_cell, grid_window, lens_grid_chart, step_lens_frame
from .line_view import LINE_THRESHOLD, LINE_WINDOW, line_frame, line_view
from .masked import head_change_map, js_cluster_map, prediction_bars
from .overview import head_overview, overview_cell
from .panels import attention_panels, layers_that_fit
from .patching import PATCH_CELL, clicked_patch_cell, patching_heatmap
from .positions import position_frame, position_picture
from .qk_parts import QK_CELL, clicked_cell, grouped_parts, part_group, qk_part_map, with_cell_clicks
from .qr import qr_matrix, qr_png, qr_svg
from .reliance import reliance_chart, reliance_frame
from .replay import (
    MAX_REPLAY_BYTES,
    MAX_REPLAY_STEPS,
    REGION_SIDE,
    ReplayTooLargeError,
    check_replay_size,
    document_replay_size,
    replay_html,
)
from .route import EDGE_KINDS, ROUTE_EDGE, clicked_via, edge_kind, route_chart, route_frames
from .row_charts import (
    ROW_CHART_PX,
    group_bars_chart,
    row_difference_chart,
    row_strip_chart,
    row_strip_frames,
    step_patching_chart,
    step_rows_chart,
    two_rows_chart,
)
from .slides import MIN_FONT_PX, SLIDE_HEIGHT, SLIDE_WIDTH, slide_pdf, slide_png, slide_svg
from .snapshots import snapshot_curves_chart, snapshot_frame
from .step import STRIP_FONT_SIZE, decoder_row_chart, source_strip, topk_bars
from .step_slider import STEP_PARAM, step_slider_chart
from .style import CHOSEN_COLOR, MASKED_COLOR, NOT_REACHED_COLOR, text_width, visible_token
from .training import timeline_frame, training_curves
from .video import MIME_TYPES, VIDEO_FORMATS, VideoError, gif_bytes, mp4_bytes, video_bytes, video_format
from .window import MIN_MAP_CELL, drag_window, keys_per_window, window_title

__all__ = ["BEAM_NODE", "CHOSEN_COLOR", "INLINE_RENDERER", "LENS_CELL", "LINE_THRESHOLD", "LINE_WINDOW", "MASKED_COLOR",
           "MAX_ANIMATION_FRAMES", "MAX_GRID_STEPS", "MAX_NODE_KEYS", "MAX_REPLAY_BYTES", "MAX_REPLAY_STEPS",
           "MIME_TYPES", "MIN_FONT_PX", "MIN_MAP_CELL", "NOT_REACHED_COLOR", "SECONDS_PER_FRAME", "SLIDE_HEIGHT",
           "SLIDE_WIDTH", "STAGES", "STAGE_KEY_WINDOW", "STEP_PARAM", "STRIP_FONT_SIZE", "VIDEO_FORMATS",
           "AnimationError", "ChartExportError", "ChartTooLargeError", "ReplayTooLargeError", "Slide", "VideoError",
           "aggregate_heatmap", "aggregate_title", "agreement_chart", "alignment_table_chart", "animated_kind",
           "animation_bytes", "attention_grid", "attention_heatmap", "attention_panels", "beam_frame",
           "beam_key_window", "beam_tree_chart", "chart_to_png", "chart_to_svg", "check_replay_size",
           "clicked_beam_node", "clicked_lens_cell", "contribution_heatmap", "decode_slides", "decoder_row_chart",
           "difference_frame", "difference_heatmap", "enable_inline_renderer", "gif_bytes", "grid_window",
           "head_overview", "heads_row_chart", "importance_chart", "inline_chart_html", "keys_per_window",
           "keys_that_fit", "label_angle", "layers_that_fit", "lens_grid_chart", "line_frame", "line_view",
           "mask_picture", "mp4_bytes", "node_attention_chart", "overview_cell", "position_frame", "position_picture",
           "qr_matrix", "qr_png", "qr_svg", "read_inline_chart", "replay_html", "selected_panel", "slide_pdf",
           "slide_png", "slide_svg", "source_strip", "stage_charts", "stage_key_window", "step_lens_frame",
           "step_probability_chart", "step_slider_chart", "text_width", "timeline_frame", "top_dimensions", "topk_bars",
           "training_curves", "training_slides", "tree_window", "video_bytes", "video_format", "visible_token",
           "window_title"]
__all__ += ["EDIT_WINDOW", "aligned_difference_frame", "aligned_difference_heatmap", "edit_window",
            "head_movement_heatmap"]
__all__ += ["head_change_map", "js_cluster_map", "prediction_bars"]
__all__ += ["snapshot_curves_chart", "snapshot_frame"]
__all__ += [
    "FINDER_SELECTION",
    "LAYER_STATISTICS",
    "finder_points",
    "head_finder_chart",
    "head_page_charts",
    "head_page_html",
    "layer_frame",
]
__all__ += ["PATCH_CELL", "clicked_patch_cell", "patching_heatmap"]
__all__ += ["QK_CELL", "clicked_cell", "grouped_parts", "part_group", "qk_part_map", "reliance_chart",
            "reliance_frame", "with_cell_clicks"]
__all__ += ["EDGE_KINDS", "ROUTE_EDGE", "clicked_via", "edge_kind", "route_chart", "route_frames"]
from .composition import (  # noqa: E402
    COMPOSITION_PAIR,
    clicked_composition_pair,
    composition_heatmap,
    k_composition_heatmap,
    q_composition_heatmap,
    v_composition_heatmap,
)

__all__ += ["COMPOSITION_PAIR", "clicked_composition_pair", "composition_heatmap", "k_composition_heatmap",
            "q_composition_heatmap", "v_composition_heatmap"]
__all__ += ["attention_map", "document_replay_size"]
__all__ += ["REGION_MAX", "REGION_SIDE", "zoom_frame", "zoom_spec"]
__all__ += ["ROW_CHART_PX", "group_bars_chart", "row_difference_chart", "step_patching_chart", "step_rows_chart",
            "two_rows_chart"]
__all__ += ["OVERVIEW_BRUSH", "OVERVIEW_SCALES", "Region", "brushed_ends", "brushed_region", "drag_window", "log_floor",
            "overview_chart", "overview_frame"]
__all__ += ["row_strip_chart", "row_strip_frames", "tile_sizes", "zoom_chart", "zoom_labelled", "zoom_tokens"]
__all__ += ["CIRCUIT_NODE", "MAX_DRAWN", "circuit_chart", "faithfulness_chart", "node_layout"]
from .poll import poll_chart, poll_frame  # noqa: E402

__all__ += ["poll_chart", "poll_frame"]
__all__ += ["decile_chart", "feature_pairs_chart", "feature_pairs_frame", "feature_sources_chart"]
