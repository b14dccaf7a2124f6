"""Guard for pages started without the frame (app.py)."""
from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def ensure_frame() -> None:
    """Rerun through app.py when Streamlit started a page by itself.

    Until some session has run app.py's st.navigation, Streamlit treats `pages/` as a legacy multipage folder
    and runs a page opened by direct link without the frame (no sidebar, wrong navigation).
    """
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
