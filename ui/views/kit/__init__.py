"""The shared kit every view draws with: widgets, cached chart specs, background jobs, the Selection record and
the link table, cached decodes, the Decode page's step state, which weights a view shows, presenter mode's keys and
the real-size layout. It imports no feature view and no page assembly."""
from . import decode_state
from .background import (
    JobTexts,
    analysis_result,
    background_result,
    can_start,
    current_job,
    job_running,
    keep_result,
    kept_result,
    part_ready,
    show_job_progress,
    start_button,
)
from .chart_cache import cached_chart
from .dictionary_texts import PAGE_TEXTS, TRAIN_TEXTS, model_texts, trained_root
from .document_text import (
    GROUP_NAMES,
    document_selection,
    document_tokens,
    holds_maps,
    page_text,
    reads_documents,
    show_window_offer,
    window_text,
)
from .feature_cell import folder_dictionaries, model_dictionaries, show_feature_cell
from .head_link import HEAD_PAGE, head_link_params, head_page_link, open_head_page, per_head_refusal
from .inference import (
    REFERENCE_FOR_KEY,
    REFERENCE_KEY,
    TEXT_KEY,
    TEXT_TASK_KEY,
    bind_reference,
    bind_text,
    decoding_message,
    default_text,
    gold_alignment_for,
    gold_cells,
    gold_for,
    greedy,
    greedy_or_message,
    greedy_pair,
    read_ahead_greedy,
    reference_for,
    share_reference,
    share_text,
    teacher,
)
from .link_params import LINK_OPENS, LINK_PARAMS
from .map_fit import BOX_INSET_PX, FIRST_SCREEN_ROWS_PX, PRESENTED_ROWS_PX, map_fit
from .over_training import keep_snapshot_curves, latest_snapshot_curves
from .presenting import (
    NEXT_HEAD_KEY,
    NEXT_STEP_KEY,
    PRESENT_KEY,
    PREV_HEAD_KEY,
    PREV_STEP_KEY,
    SWITCH_KEY,
    folded_controls,
    head_keys,
    presenting,
)
from .real_size import (
    COMBINE,
    MAP_WIDTH,
    combine_options,
    combined_title,
    key_window,
    large_map,
    map_columns,
    needs_page_width,
    overview_first,
    show_head_overview,
)
from .selection import Selection
from .text_box import model_text_input
from .text_sources_view import show_text_sources
from .weights import model_caption, show_weights, slide_title, weights_of
from .why_parts import composition_for, decode_parts_for, parts_key, reliance_for
from .widgets import (
    PAGE_PX,
    SLIDES_SUFFIX,
    Column,
    SlideTitle,
    bring_into_view,
    chart_downloads,
    chart_heading,
    chart_spec,
    grid_cell,
    group_head_name,
    head_label,
    head_picker,
    kind_picker,
    kind_title,
    layer_picker,
    map_kind,
    md,
    md_token,
    require_model,
    show_chart,
    show_chips,
    show_small_table,
    slide_downloads,
    visible,
)

__all__ = ["COMBINE", "LINK_OPENS", "LINK_PARAMS", "MAP_WIDTH", "NEXT_HEAD_KEY", "NEXT_STEP_KEY", "PAGE_PX",
           "PRESENT_KEY", "PREV_HEAD_KEY", "PREV_STEP_KEY", "REFERENCE_FOR_KEY", "REFERENCE_KEY",
           "SLIDES_SUFFIX", "SWITCH_KEY", "TEXT_KEY", "TEXT_TASK_KEY", "Column", "JobTexts", "Selection", "SlideTitle",
           "analysis_result", "background_result", "bind_reference", "bind_text", "cached_chart", "can_start",
           "chart_downloads", "chart_heading", "chart_spec", "combine_options", "combined_title", "decode_state",
           "decoding_message", "default_text", "gold_alignment_for", "gold_cells", "gold_for", "greedy",
           "greedy_or_message", "greedy_pair", "grid_cell", "group_head_name", "head_keys", "head_label", "head_picker",
           "job_running", "keep_result", "kept_result", "key_window", "kind_picker", "kind_title", "large_map",
           "layer_picker", "map_columns", "map_fit", "map_kind", "md", "md_token", "model_caption", "needs_page_width",
           "overview_first", "part_ready", "presenting", "read_ahead_greedy", "reference_for", "require_model",
           "share_reference", "share_text", "show_chart", "show_chips", "show_head_overview", "show_small_table",
           "show_weights", "slide_downloads", "slide_title", "start_button", "teacher", "visible", "weights_of"]
__all__ += ["bring_into_view"]
__all__ += ["BOX_INSET_PX", "FIRST_SCREEN_ROWS_PX", "PRESENTED_ROWS_PX", "folded_controls", "model_text_input",
            "per_head_refusal"]
__all__ += ["HEAD_PAGE", "head_link_params", "head_page_link", "keep_snapshot_curves", "latest_snapshot_curves",
            "open_head_page"]
__all__ += ["composition_for", "decode_parts_for", "parts_key", "reliance_for"]
__all__ += ["current_job", "show_job_progress"]
__all__ += ["GROUP_NAMES", "document_selection", "document_tokens", "holds_maps", "page_text", "reads_documents",
            "show_window_offer", "window_text"]
__all__ += ["PAGE_TEXTS", "TRAIN_TEXTS", "model_texts", "trained_root"]
__all__ += ["folder_dictionaries", "model_dictionaries", "show_feature_cell", "show_text_sources"]
