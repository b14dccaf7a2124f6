"""Per-page assembly: the code that builds a page's Selection and lays out its views (Home, Attention, Decode's
step-through, Compare and its edit mode, Learn, the encoder-only pages). It imports features and the kit."""
from .attention import MODES, attention_result, attention_selection, show_large_map, show_model_view
from .attention_page import show_attention_views, show_document_views
from .compare import (
    compare_decodes,
    compare_kinds,
    compare_selection,
    divergence_message,
    pick_model_b,
    show_both_maps,
    show_difference,
    show_outputs,
    step_caption,
    step_picker,
    step_table,
)
from .decode_page import show_decode_views
from .dictionary_page import show_dictionary_page
from .edit_compare import (
    EDIT,
    EDIT_KEY,
    MODE_KEY,
    MODELS,
    compare_mode,
    edit_comparison,
    edited_text,
    show_edit_difference,
    show_edit_mode,
    show_edit_outputs,
)
from .edit_compare import MODES as COMPARE_MODES
from .head_page import show_head_page
from .home import home_selection, show_try_it
from .learn import TOUR, learn_selection, show_stage, tour_navigation
from .masked import masked_attention_result, segment_choice, show_mask_page
from .masked_compare import show_masked_compare
from .step_through import (
    decode_results,
    decode_selection,
    replay_download,
    show_ablation_panel,
    show_output_cards,
    show_step_through,
)

__all__ = ["COMPARE_MODES", "EDIT", "EDIT_KEY", "MODELS", "MODES", "MODE_KEY", "TOUR", "attention_result",
           "attention_selection", "compare_decodes", "compare_kinds", "compare_mode", "compare_selection",
           "decode_results", "decode_selection", "divergence_message", "edit_comparison", "edited_text",
           "home_selection", "learn_selection", "masked_attention_result", "pick_model_b", "replay_download",
           "segment_choice", "show_ablation_panel", "show_attention_views", "show_both_maps", "show_decode_views",
           "show_difference", "show_edit_difference", "show_edit_mode", "show_edit_outputs", "show_large_map",
           "show_mask_page", "show_masked_compare", "show_model_view", "show_output_cards", "show_outputs",
           "show_stage", "show_step_through", "show_try_it", "step_caption", "step_picker", "step_table",
           "tour_navigation"]
__all__ += ["show_dictionary_page", "show_head_page"]

__all__ += ["show_document_views"]
from .room_poll import show_room_poll  # noqa: E402

__all__ += ["show_room_poll"]
