"""The charts stage: pure functions from traces and frames to Altair / Plotly figures (no Streamlit)."""
import altair as alt

# Altair refuses to serialise more than 5,000 rows by default; a 20-word caption's head grid has ~10^4-10^5.
# Our builders cap what they draw themselves (attention.MAX_GRID_CELLS raises ChartTooLargeError, which pages
# show as a message), so that limit only turned ordinary inputs into exceptions.
alt.data_transformers.disable_max_rows()

from .aggregates import aggregate_heatmap, aggregate_title
from .ablation import agreement_chart, importance_chart, step_probability_chart
from .attention import ChartTooLargeError, attention_grid, attention_heatmap, label_angle, selected_panel
from .difference import difference_frame, difference_heatmap
from .export import chart_to_png, chart_to_svg
from .heads import alignment_table_chart
from .overview import head_overview, overview_cell
from .window import MIN_MAP_CELL, keys_per_window
from .step import STRIP_FONT_SIZE, decoder_row_chart, source_strip, topk_bars
from .style import CHOSEN_COLOR, MASKED_COLOR, NOT_REACHED_COLOR, text_width, visible_token
from .training import timeline_frame, training_curves

__all__ = ["aggregate_heatmap", "aggregate_title", "head_overview", "overview_cell", "CHOSEN_COLOR", "ChartTooLargeError", "MASKED_COLOR", "NOT_REACHED_COLOR", "STRIP_FONT_SIZE",
           "agreement_chart", "alignment_table_chart", "attention_grid", "attention_heatmap", "chart_to_png",
           "chart_to_svg", "decoder_row_chart", "difference_frame", "difference_heatmap", "importance_chart",
           "label_angle", "selected_panel", "source_strip", "step_probability_chart", "text_width",
           "timeline_frame", "topk_bars", "training_curves", "visible_token"]
