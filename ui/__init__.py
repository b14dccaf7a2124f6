"""Streamlit code shared by the pages of Attention Studio (sidebar, model picker, session state, widgets)."""
