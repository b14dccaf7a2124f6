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
from .attribution import show_agreement, show_step_attribution
from .chart_cache import cached_chart
from .compare import divergence_message, model_caption, pick_model_b, step_caption, step_picker, step_table
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
    greedy,
    greedy_or_message,
    reference_for,
    share_reference,
    share_text,
    teacher,
)
from .weights import show_weights
from .widgets import (
    Column,
    chart_downloads,
    chart_heading,
    chart_spec,
    grid_cell,
    head_label,
    head_picker,
    kind_picker,
    layer_picker,
    md,
    md_token,
    require_model,
    show_chart,
    show_chips,
    show_small_table,
    visible,
)

__all__ = ["Column", "REFERENCE_FOR_KEY", "REFERENCE_KEY", "TEXT_KEY", "TEXT_TASK_KEY", "ablated_run",
           "attention_ablation", "bind_reference", "bind_text", "cached_chart", "chart_downloads",
           "chart_heading", "chart_spec", "clicked_note", "current_output", "default_text",
           "divergence_message", "gold_alignment_for", "gold_cells", "greedy", "greedy_or_message",
           "grid_cell", "grid_key", "head_label", "head_picker", "head_selection", "kind_picker",
           "layer_picker", "md", "md_token", "model_caption", "off_panels", "pick_model_b", "reference_for",
           "require_model", "share_reference", "share_text", "show_ablated_step", "show_agreement",
           "show_alignment_scores", "show_chart", "show_chips", "show_comparison", "show_small_table",
           "show_step_attribution", "show_sweep", "show_weights", "step_caption", "step_picker",
           "step_table", "teacher", "toggle_clicked_head", "visible"]
