"""The server: settings (paths, environment variables), server-side limits, Streamlit's static files served
from memory, the page's chart code preloaded."""
from .limits import LIMITS, check_limits, limit_violations
from .preload import JS_DIR, PreloadChunks, first_view_chunks, preload_links
from .settings import (
    THREADS_ENV,
    checkpoints_root,
    configure_charts,
    configure_torch,
    hf_models_root,
    max_training_processes,
    preferred_default,
    runs_root,
    training_threads,
)
from .static_cache import MAX_AGE, StaticFromMemory, precompress

__all__ = ["JS_DIR", "LIMITS", "MAX_AGE", "PreloadChunks", "StaticFromMemory", "THREADS_ENV", "check_limits",
           "checkpoints_root", "configure_charts", "configure_torch", "first_view_chunks", "hf_models_root",
           "limit_violations", "max_training_processes", "precompress", "preferred_default",
           "preload_links", "runs_root", "training_threads"]
