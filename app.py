"""Attention Studio: the frame around every page (page config, navigation, shared sidebar).

`streamlit run app.py` first imports this file to look for an ASGI app: it finds `app`, an `st.App` whose start-up
turns Nagle's algorithm off on the server's connections and imports the pages' libraries and loads the default model
before the server answers (`ui.shell.serve`), and whose middleware has the browser fetch the chart and widget code every
page needs while the page starts (`ui.server.preload`), serves Streamlit's own static files from memory, gzip'd
(`ui.server.static_cache`), and starts a link's decode as soon as its page is asked for (`ui.links.read_ahead`).
Every browser session then runs this file as the page script, where `__name__` is "__main__".
"""
import streamlit as st

if __name__ != "__main__":  # imported by `streamlit run` (or uvicorn) to find the app
    from starlette.middleware import Middleware

    from ui.links import ReadAheadLinks
    from ui.server import PreloadChunks, StaticFromMemory, server_patches
    from ui.shell import warm_up_lifespan

    # Our patches of Streamlit's server, behind one switch (ATTENTION_STUDIO_SERVER_PATCHES=off: Streamlit as it
    # ships; tests/e2e/test_e2e_browser.py opens the app that way too)
    patches = [Middleware(ReadAheadLinks), Middleware(PreloadChunks), Middleware(StaticFromMemory)]
    app = st.App(__file__, lifespan=warm_up_lifespan, middleware=patches if server_patches() else [])
else:
    from ui.links import apply_presenter, page_name, presenter_switch, restore, run_page, share_control, show_notes
    from ui.server import PAGES, configure_charts, configure_torch
    from ui.shell import apply_theme, page_icon, render_sidebar
    from ui.views import show_room_poll

    st.set_page_config(page_title="Attention Studio", page_icon=page_icon(), layout="wide")  # drawn: nothing fetched
    configure_torch()
    configure_charts()

    page = st.navigation([st.Page(p.path, title=p.title, icon=p.icon, default=p.default) for p in PAGES])
    name = page_name(page.title)
    restore(name)  # a shared link or a reload: the link's values into the widgets
    apply_theme()
    apply_presenter()
    render_sidebar(refresh_every=3.0 if page.title == "Train" else 1.0, page=name)  # Train shows the run itself
    with st.sidebar:
        share_control()
    presenter_switch(name)
    show_notes()
    show_room_poll(name)  # on a poll's link (the QR code's, while the speaker polls the room): its vote buttons first
    run_page(page, name)  # then the page as it is now into the URL
