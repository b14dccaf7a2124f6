"""The frame every page shares: the sidebar, the theme, the guard for pages started without the frame, and the app's
warm start (`make run` is `python -m ui.shell.serve`)."""
from .frame import ensure_frame
from .serve import nodelay_listeners, warm_up, warm_up_lifespan
from .sidebar import checkpoint_zip, render_sidebar
from .theme import apply_theme

__all__ = ["apply_theme", "checkpoint_zip", "ensure_frame", "nodelay_listeners", "render_sidebar", "warm_up",
           "warm_up_lifespan"]
