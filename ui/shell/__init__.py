"""The frame every page shares: the sidebar, the theme, the guard for pages started without the frame, the app's
warm start (`make run` is `python -m ui.shell.serve`), and the app's server seen from outside: the desktop window
(`make desktop` is `python -m ui.shell.desktop`) and the free port and health check it, the browser tests and the
benchmarks start the server with (local_server)."""
from __future__ import annotations

import importlib
from typing import Any

# Each public name and the module it lives in, imported on first use (PEP 562): `python -m ui.shell.desktop` and
# `studio_browser` import this package first, and the desktop launcher must not load Streamlit, torch and the pages'
# code (~4 s, ~400 MB, and Streamlit's warnings outside a server) only to start the server in a process of its own.
_HOMES = {
    "apply_theme": "theme",
    "checkpoint_zip": "sidebar",
    "display_problem": "desktop",
    "ensure_frame": "frame",
    "free_port": "local_server",
    "HOST": "local_server",
    "is_serving": "local_server",
    "page_icon": "icon",
    "nodelay_listeners": "serve",
    "render_sidebar": "sidebar",
    "ServerNotServing": "local_server",
    "wait_until_serving": "local_server",
    "warm_up": "serve",
    "warm_up_lifespan": "serve",
    "window_problem": "desktop",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
