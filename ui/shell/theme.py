"""A little CSS on top of the theme in .streamlit/config.toml: less empty space above each page, chart headings, small
tables (`ui.widgets.small_table`), no "Download as PNG" in the chart toolbar (the pages' own PNG / SVG buttons export
charts; two PNGs confused users), a full-width chart wider than the page scrolling inside itself (never cut off; a
chart in a column keeps the few pixels it may take of the gap beside it), a sidebar wide enough for the model
picker's labels (a user can still widen it)."""
import streamlit as st

SIDEBAR_PX = 360  # the sidebar's least width (Streamlit's 300 cut "autosave-reverse-…  ·  Saved run")

_CSS = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; padding-bottom: 3rem; }
[data-testid="stSidebarHeader"] { margin-bottom: 0.5rem; }
[data-testid="stElementToolbar"] button[aria-label="Download as PNG"] { display: none; }
[data-testid="stElementContainer"]:not([data-testid="stColumn"] *):has([data-testid="stVegaLiteChart"]) {
  overflow-x: auto; overflow-y: hidden; }
section[data-testid="stSidebar"][data-collapsed="false"] { min-width: %dpx; }
.studio-chart-heading { font-weight: 600; font-size: 14px; color: #1f2937; margin: 0.2rem 0 -0.1rem 0; }
.studio-table { max-height: 23rem; overflow-y: auto; border: 1px solid #e5e7eb; border-radius: 0.5rem; }
.studio-table table { width: 100%%; border-collapse: collapse; margin: 0; font-size: 14px; }
.studio-table th, .studio-table td { border: none; border-bottom: 1px solid #eef0f3; padding: 0.3rem 0.6rem; }
.studio-table th { position: sticky; top: 0; background: #f8f9fb; font-weight: 400; color: #4b5563; text-align: left; }
.studio-table .studio-number { text-align: right; font-variant-numeric: tabular-nums; }
.studio-table th.studio-help { text-decoration: underline dotted; cursor: help; }
</style>
"""


def apply_theme() -> None:
    """Inject the app's CSS (no visible element)."""
    st.html(_CSS % SIDEBAR_PX)
