"""What the pages draw: widgets, cached chart specs, cached decodes, the Decode page's step-through state, weights,
ablation, alignment, attribution and Compare views."""
from .ablation import (
    ablated_run,
    attention_ablation,
    clicked_note,
    current_output,
    grid_key,
    head_selection,
    off_panels,
    show_ablated_step,
    show_comparison,
    show_sweep,
    toggle_clicked_head,
)
from .alignment import show_alignment_scores
from .animation import animation_downloads, decode_animation, file_stem
from .attention import MODES, attention_result, attention_selection, show_large_map, show_model_view
from .attribution import show_agreement, show_step_attribution
from .chart_cache import cached_chart
from .compare import (
    compare_decodes,
    compare_kinds,
    compare_selection,
    divergence_message,
    model_caption,
    pick_model_b,
    show_both_maps,
    show_difference,
    show_outputs,
    step_caption,
    step_picker,
    step_table,
)
from .edit_compare import EDIT, EDIT_KEY, MODE_KEY, MODELS, compare_mode, edit_comparison, edited_text
from .edit_compare import MODES as COMPARE_MODES
from .edit_compare import show_edit_difference, show_edit_mode, show_edit_outputs
from .patching import show_patched_link
from .head_computation import (
    MAP_VALUES,
    captured_for,
    show_attention_inside,
    show_contribution_map,
    show_head_computation,
    show_step_inside,
)
from .masked import masked_attention_result, segment_choice, show_mask_page
from .masked_compare import show_masked_compare
from .corpus import latest_corpus_statistics, show_corpus_statistics
from .home import home_selection, show_try_it
from .learn import TOUR, learn_selection, show_stage, tour_navigation
from .line_view import show_line_view
from .inference import (
    REFERENCE_FOR_KEY,
    REFERENCE_KEY,
    TEXT_KEY,
    TEXT_TASK_KEY,
    bind_reference,
    bind_text,
    default_text,
    gold_alignment_for,
    gold_cells,
    gold_for,
    greedy,
    greedy_or_message,
    read_ahead_greedy,
    reference_for,
    share_reference,
    share_text,
    teacher,
)
from .presenting import (
    NEXT_HEAD_KEY,
    NEXT_STEP_KEY,
    PRESENT_KEY,
    PREV_HEAD_KEY,
    PREV_STEP_KEY,
    SWITCH_KEY,
    head_keys,
    presenting,
)
from .selection import LINK_OPENS, LINK_PARAMS, Selection
from .real_size import COMBINE, MAP_WIDTH, combine_options, map_columns
from .beam import show_beam_tree
from .sampling import sampled_or_message, sampling_controls
from .step_through import (
    decode_results,
    decode_selection,
    replay_download,
    show_ablation_panel,
    show_output_cards,
    show_step_through,
)
from .weights import show_weights, slide_title, weights_of
from .widgets import (
    SLIDES_SUFFIX,
    Column,
    SlideTitle,
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

__all__ = ["COMBINE", "Column", "MAP_WIDTH", "MODES", "NEXT_HEAD_KEY", "NEXT_STEP_KEY", "PRESENT_KEY",
           "PREV_HEAD_KEY", "PREV_STEP_KEY", "REFERENCE_FOR_KEY", "REFERENCE_KEY", "SLIDES_SUFFIX", "SWITCH_KEY",
           "SlideTitle", "TEXT_KEY", "TEXT_TASK_KEY", "ablated_run", "attention_ablation", "attention_result",
           "bind_reference", "bind_text", "cached_chart", "chart_downloads", "chart_heading", "chart_spec",
           "clicked_note", "combine_options", "map_columns", "compare_kinds", "current_output", "decode_results",
           "default_text", "divergence_message", "gold_alignment_for", "gold_cells", "gold_for", "greedy",
           "greedy_or_message", "grid_cell", "grid_key", "group_head_name", "head_keys", "head_label", "head_picker",
           "head_selection", "kind_picker", "kind_title", "layer_picker", "map_kind", "md", "md_token",
           "model_caption", "off_panels", "pick_model_b", "presenting", "read_ahead_greedy", "reference_for",
           "replay_download", "require_model", "share_reference", "share_text", "show_ablated_step",
           "show_ablation_panel", "show_agreement", "show_alignment_scores", "show_both_maps", "show_chart",
           "show_chips", "show_comparison", "show_difference", "show_large_map", "show_model_view",
           "show_output_cards", "show_outputs", "show_small_table", "show_step_attribution", "show_step_through",
           "show_sweep", "show_weights", "slide_downloads", "slide_title", "step_caption", "step_picker",
           "step_table", "teacher", "toggle_clicked_head", "visible", "weights_of",
           "MAP_VALUES", "captured_for", "show_attention_inside", "show_contribution_map", "show_head_computation",
           "show_step_inside", "TOUR", "show_stage", "tour_navigation", "show_line_view"]
__all__ += ["COMPARE_MODES", "EDIT", "EDIT_KEY", "MODE_KEY", "MODELS", "compare_mode", "edit_comparison", "edited_text",
            "show_edit_difference", "show_edit_mode", "show_edit_outputs"]
__all__ += ["latest_corpus_statistics", "masked_attention_result", "segment_choice", "show_corpus_statistics",
            "show_mask_page", "show_masked_compare"]
__all__ += ["animation_downloads", "decode_animation", "file_stem"]
__all__ += ["sampled_or_message", "sampling_controls", "show_beam_tree"]
__all__ += ["show_patched_link"]
__all__ += ["LINK_OPENS", "LINK_PARAMS", "Selection", "attention_selection", "compare_decodes", "compare_selection",
            "decode_selection", "home_selection", "learn_selection", "show_try_it"]
