"""A little CSS on top of the theme in .streamlit/config.toml: less empty space above each page, chart headings, and
no "Download as PNG" in the chart toolbar (the pages' own PNG / SVG buttons export charts; two PNGs confused users),
a sidebar wide enough for the model picker's labels (a user can still widen it)."""
import streamlit as st

from ui.models import SIDEBAR_PX

_CSS = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; padding-bottom: 3rem; }
[data-testid="stSidebarHeader"] { margin-bottom: 0.5rem; }
[data-testid="stElementToolbar"] button[aria-label="Download as PNG"] { display: none; }
section[data-testid="stSidebar"][data-collapsed="false"] { min-width: %dpx; }
.studio-chart-heading { font-weight: 600; font-size: 14px; color: #1f2937; margin: 0.2rem 0 -0.4rem 0; }
</style>
"""


def apply_theme() -> None:
    """Inject the app's CSS (no visible element)."""
    st.html(_CSS % SIDEBAR_PX)
