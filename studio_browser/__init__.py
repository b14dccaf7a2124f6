"""Drive the real app: a Streamlit server subprocess, headless Chromium, and waits for what a user sees.

Shared by the browser tests (tests/e2e/) and the app benchmarks (bench/app/, bench/load/, bench/screenshots/):
server (the app on a free local port, started as `make run` starts it; the port and the health check are
`ui.shell`'s), chromium (Debian's Chromium through Playwright), waits (what the page shows, waited for on the page,
never on the clock) and actions (what a user does).
"""
from .actions import choose, open_page, open_select, pick_option
from .chromium import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, SharedChromium, chromium_missing, launch_chromium, new_page
from .server import ROOT, AppServer, AppStartError, running_app, shipped_checkpoints
from .waits import (
    EXCEPTION,
    IDLE_JS,
    PAGE_SETUP_JS,
    VIEW_JS,
    PageView,
    charts_condition,
    decode_step_condition,
    last_press,
    page_errors,
    runs_finished,
    view_from,
    wait_charts,
    wait_decode_step,
    wait_for,
    wait_idle,
    wait_rerun,
)

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "EXCEPTION", "IDLE_JS", "PAGE_SETUP_JS", "ROOT", "VIEWPORT",
           "VIEW_JS", "AppServer", "AppStartError", "PageView", "SharedChromium", "charts_condition", "choose",
           "chromium_missing", "decode_step_condition", "last_press", "launch_chromium", "new_page", "open_page",
           "open_select", "page_errors", "pick_option", "running_app", "runs_finished", "shipped_checkpoints",
           "view_from", "wait_charts", "wait_decode_step", "wait_for", "wait_idle", "wait_rerun"]
