"""The server: settings (paths, environment variables), server-side limits, Streamlit's static files served
from memory, the page's chart code preloaded, the address the room opens, who is audience, and the one list of pages."""
from .audience import REFUSALS, audience_refusal, client_address, is_audience, is_local, refusal, refuse, speaker_only
from .kept_inputs import DOC_PARAM, DOC_STATE_KEY, keep_text, kept_text, text_hash
from .limits import LIMITS, check_limits, limit_violations
from .local_addresses import forget_addresses, is_this_machine, machine_addresses
from .page_registry import PAGES, PageEntry, page_named, page_titled
from .preload import JS_DIR, PreloadChunks, first_view_chunks, preload_links
from .settings import (
    AUDIENCE_ENV,
    PATCHES_ENV,
    PUBLIC_URL_ENV,
    THREADS_ENV,
    audience_mode,
    checkpoints_root,
    configure_charts,
    configure_torch,
    hf_models_root,
    inputs_root,
    max_training_processes,
    preferred_default,
    public_url,
    runs_root,
    server_patches,
    training_threads,
)
from .share_address import ShareAddress, is_loopback, network_address, share_address
from .shared_cache import shared, shared_cache
from .static_cache import MAX_AGE, StaticFromMemory, precompress

__all__ = [
    "AUDIENCE_ENV",
    "DOC_PARAM",
    "DOC_STATE_KEY",
    "JS_DIR",
    "LIMITS",
    "MAX_AGE",
    "PAGES",
    "PATCHES_ENV",
    "PUBLIC_URL_ENV",
    "REFUSALS",
    "THREADS_ENV",
    "PageEntry",
    "PreloadChunks",
    "ShareAddress",
    "StaticFromMemory",
    "audience_mode",
    "audience_refusal",
    "check_limits",
    "checkpoints_root",
    "client_address",
    "configure_charts",
    "configure_torch",
    "first_view_chunks",
    "forget_addresses",
    "hf_models_root",
    "inputs_root",
    "is_audience",
    "is_local",
    "is_loopback",
    "is_this_machine",
    "keep_text",
    "kept_text",
    "limit_violations",
    "machine_addresses",
    "max_training_processes",
    "network_address",
    "page_named",
    "page_titled",
    "precompress",
    "preferred_default",
    "preload_links",
    "public_url",
    "refusal",
    "refuse",
    "runs_root",
    "server_patches",
    "share_address",
    "shared",
    "shared_cache",
    "speaker_only",
    "text_hash",
    "training_threads",
]
