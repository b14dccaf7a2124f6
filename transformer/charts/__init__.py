"""The charts stage: pure functions from traces and frames to Altair / Plotly figures (no Streamlit)."""
import altair as alt

# Altair refuses to serialise more than 5,000 rows by default; a 20-word caption's head grid has ~10^4-10^5.
# Our builders cap what they draw themselves (attention.MAX_GRID_CELLS raises ChartTooLargeError, which pages
# show as a message), so that limit only turned ordinary inputs into exceptions.
alt.data_transformers.disable_max_rows()

from .ablation import agreement_chart, importance_chart, step_probability_chart
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
from .aggregates import aggregate_heatmap, aggregate_title
from .attention import ChartTooLargeError, attention_grid, attention_heatmap, label_angle, selected_panel
from .difference import difference_frame, difference_heatmap
from .edit_difference import EDIT_WINDOW, aligned_difference_frame, aligned_difference_heatmap, edit_window
from .edit_difference import head_movement_heatmap
from .patching import PATCH_CELL, clicked_patch_cell, patching_heatmap
from .export import ChartExportError, chart_to_png, chart_to_svg
from .head_computation import KEY_WINDOW as STAGE_KEY_WINDOW
from .head_computation import STAGES, contribution_heatmap, heads_row_chart, mask_picture, stage_charts, top_dimensions
from .line_view import LINE_THRESHOLD, LINE_WINDOW, line_frame, line_view
from .positions import position_frame, position_picture
from .head_computation import key_window as stage_key_window
from .heads import alignment_table_chart
from .beam import BEAM_NODE, beam_frame, beam_tree_chart, clicked_beam_node, node_attention_chart
from .beam import MAX_NODE_KEYS, keys_that_fit, tree_window
from .beam import key_window as beam_key_window
from .lens import LENS_CELL, MAX_GRID_STEPS, clicked_lens_cell, grid_window, lens_grid_chart, step_lens_frame
from .inline_html import INLINE_RENDERER, enable_inline_renderer, inline_chart_html, read_inline_chart
from .masked import head_change_map, js_cluster_map, prediction_bars
from .snapshots import snapshot_curves_chart, snapshot_frame
from .overview import head_overview, overview_cell
from .finder import FINDER_SELECTION, finder_points, head_finder_chart
from .head_page import LAYER_STATISTICS, head_page_charts, head_page_html, layer_frame
from .panels import attention_panels, layers_that_fit
from .qr import qr_matrix, qr_png, qr_svg
from .replay import MAX_REPLAY_BYTES, MAX_REPLAY_STEPS, ReplayTooLargeError, check_replay_size, replay_html
from .slides import MIN_FONT_PX, SLIDE_HEIGHT, SLIDE_WIDTH, slide_pdf, slide_png, slide_svg
from .step import STRIP_FONT_SIZE, decoder_row_chart, source_strip, topk_bars
from .step_slider import STEP_PARAM, step_slider_chart
from .style import CHOSEN_COLOR, MASKED_COLOR, NOT_REACHED_COLOR, text_width, visible_token
from .training import timeline_frame, training_curves
from .video import MIME_TYPES, VIDEO_FORMATS, VideoError, gif_bytes, mp4_bytes, video_bytes, video_format
from .window import MIN_MAP_CELL, keys_per_window, window_title

__all__ = ["AnimationError", "MAX_ANIMATION_FRAMES", "MIME_TYPES", "SECONDS_PER_FRAME", "Slide", "VIDEO_FORMATS",
           "VideoError", "animated_kind", "animation_bytes", "decode_slides", "gif_bytes", "mp4_bytes",
           "training_slides", "video_bytes", "video_format",
           "CHOSEN_COLOR", "ChartExportError", "ChartTooLargeError", "INLINE_RENDERER", "MASKED_COLOR",
           "MAX_REPLAY_BYTES", "MAX_REPLAY_STEPS", "MIN_FONT_PX", "MIN_MAP_CELL", "NOT_REACHED_COLOR",
           "ReplayTooLargeError", "SLIDE_HEIGHT", "SLIDE_WIDTH", "STEP_PARAM", "STRIP_FONT_SIZE", "aggregate_heatmap",
           "aggregate_title", "agreement_chart", "alignment_table_chart", "attention_grid", "attention_heatmap",
           "attention_panels", "chart_to_png", "chart_to_svg", "check_replay_size", "decoder_row_chart",
           "difference_frame", "difference_heatmap", "enable_inline_renderer", "head_overview", "importance_chart",
           "inline_chart_html", "keys_per_window", "window_title", "label_angle", "layers_that_fit", "overview_cell",
           "qr_matrix", "qr_png", "qr_svg", "read_inline_chart", "replay_html", "selected_panel", "slide_pdf",
           "slide_png", "slide_svg", "source_strip", "step_probability_chart", "step_slider_chart", "text_width",
           "timeline_frame", "topk_bars", "training_curves", "visible_token",
           "STAGES", "STAGE_KEY_WINDOW", "contribution_heatmap", "stage_charts", "stage_key_window", "top_dimensions", "mask_picture", "heads_row_chart",
           "LINE_THRESHOLD", "LINE_WINDOW", "line_frame", "line_view",
           "position_frame", "position_picture",
           "LENS_CELL", "MAX_GRID_STEPS", "clicked_lens_cell", "grid_window", "lens_grid_chart", "step_lens_frame",
           "BEAM_NODE", "MAX_NODE_KEYS", "beam_frame", "beam_key_window", "beam_tree_chart", "clicked_beam_node",
           "keys_that_fit", "tree_window",
           "node_attention_chart"]
__all__ += ["EDIT_WINDOW", "aligned_difference_frame", "aligned_difference_heatmap", "edit_window", "head_movement_heatmap"]
__all__ += ["head_change_map", "js_cluster_map", "prediction_bars"]
__all__ += ["snapshot_curves_chart", "snapshot_frame"]
__all__ += ["FINDER_SELECTION", "finder_points", "head_finder_chart", "LAYER_STATISTICS", "head_page_charts",
            "head_page_html", "layer_frame"]
__all__ += ["PATCH_CELL", "clicked_patch_cell", "patching_heatmap"]
from .composition import (  # noqa: E402
    COMPOSITION_PAIR, clicked_composition_pair, composition_heatmap, k_composition_heatmap, q_composition_heatmap,
    v_composition_heatmap,
)

__all__ += ["COMPOSITION_PAIR", "clicked_composition_pair", "composition_heatmap", "k_composition_heatmap",
            "q_composition_heatmap", "v_composition_heatmap"]
