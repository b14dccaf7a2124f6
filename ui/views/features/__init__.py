"""Feature views, one module per feature (ablation, alignment, animation, attribution, beam tree, corpus
statistics, inside one head, logit lens, line view, patching, sampling; at a document's length the map's overview
and zoom, the grouped row, model B's row and the patching estimate at a step): each imports the kit and the library,
never another feature and never a page's assembly."""
from .ablation import (
    ablated_run,
    attention_ablation,
    chosen_heads,
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
from .attribution import show_agreement, show_step_attribution
from .beam import show_beam_tree
from .circuits_view import CircuitRun, circuit_link, show_circuit, show_circuits
from .composition_view import show_composition
from .corpus import latest_corpus, latest_corpus_statistics, show_corpus_statistics
from .dictionary_features import pick_dictionary, show_dictionary_features
from .dictionary_training import OPEN_KEY as TRAIN_OPEN_KEY
from .dictionary_training import dictionary_job_running, show_dictionary_training, show_training_entry
from .document_feature_sources import show_document_feature_sources
from .grouped_row import show_grouped_row
from .head_computation import (
    MAP_VALUES,
    captured_for,
    show_attention_inside,
    show_contribution_map,
    show_head_computation,
    show_step_contribution,
    show_step_inside,
)
from .head_finder import latest_estimate, show_head_finder
from .lens import show_lens_at_steps, show_step_lens
from .line_view import show_line_view
from .map_overview import OVERVIEW_KEY, ZOOM_KEYS_KEY, ZOOM_ROWS_KEY, show_map_overview
from .model_b_row import show_model_b_row
from .patching import show_patched_link, show_patching
from .qk_table import QK_CELL, clickable_cells, open_clicked_cell, show_attention_qk, show_qk, show_step_qk
from .reliance_view import show_reliance
from .routes_view import show_step_route
from .sampling import sampled_or_message, sampling_controls, show_sampled_step
from .step_patching import show_step_patching

__all__ = ["MAP_VALUES", "ablated_run", "animation_downloads", "attention_ablation", "captured_for", "chosen_heads",
           "clicked_note", "current_output", "decode_animation", "file_stem", "grid_key", "head_selection",
           "latest_corpus_statistics", "off_panels", "sampled_or_message", "sampling_controls", "show_ablated_step",
           "show_agreement", "show_alignment_scores", "show_attention_inside", "show_beam_tree", "show_comparison",
           "show_contribution_map", "show_corpus_statistics", "show_head_computation", "show_line_view",
           "show_patched_link", "show_patching", "show_sampled_step", "show_step_attribution",
           "show_step_contribution", "show_step_inside", "show_step_lens", "show_sweep", "toggle_clicked_head"]
__all__ += ["latest_corpus", "latest_estimate", "show_head_finder"]
__all__ += ["QK_CELL", "clickable_cells", "open_clicked_cell", "show_attention_qk", "show_composition", "show_qk",
            "show_reliance", "show_step_qk", "show_step_route"]
__all__ += ["OVERVIEW_KEY", "ZOOM_KEYS_KEY", "ZOOM_ROWS_KEY", "show_grouped_row", "show_lens_at_steps",
            "show_map_overview", "show_model_b_row", "show_step_patching"]
__all__ += ["CircuitRun", "circuit_link", "show_circuit", "show_circuits"]
__all__ += ["TRAIN_OPEN_KEY", "dictionary_job_running", "pick_dictionary",
            "show_dictionary_features", "show_dictionary_training", "show_document_feature_sources",
            "show_training_entry"]
