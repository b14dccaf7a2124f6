"""Guard for pages started without the frame (app.py)."""
from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def ensure_frame() -> None:
    """Rerun through app.py when Streamlit started a page by itself.

    Until some session has run app.py's st.navigation, Streamlit treats `pages/` as a legacy multipage folder
    and runs a page opened by direct link without the frame (no sidebar, wrong navigation). Streamlit 1.67 offers no
    setting to have both a `pages/` folder (the project's layout keeps it) and `st.navigation`, so this flip of its
    internal flag is the one place that knows; every page calls it first (tests/app/test_app_layout.py), and a browser
    test opens a fresh server on a page's own address (tests/e2e/test_e2e_browser.py, the server-patches test).
    """
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
