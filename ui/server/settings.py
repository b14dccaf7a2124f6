"""The app's settings from environment variables: where checkpoints and runs are, threads, the address the room
opens the studio at, and which sessions are audience."""
from __future__ import annotations

import os
from pathlib import Path

import transformer  # noqa: F401  (sets OMP_WAIT_POLICY before torch is first loaded)

APP_ROOT = Path(__file__).resolve().parents[2]
CHECKPOINTS_ENV = "ATTENTION_STUDIO_CHECKPOINTS"
RUNS_ENV = "ATTENTION_STUDIO_RUNS"
DEFAULT_ENV = "ATTENTION_STUDIO_DEFAULT"
DEFAULT_ORDER = ("multi30k-en-de", "toy-en-de", "reverse", "sort")  # a newcomer types English: the real corpus first
THREADS_ENV = "ATTENTION_STUDIO_TORCH_THREADS"
HF_MODELS_ENV = "ATTENTION_STUDIO_HF_MODELS"
PUBLIC_URL_ENV = "ATTENTION_STUDIO_PUBLIC_URL"
AUDIENCE_ENV = "ATTENTION_STUDIO_AUDIENCE"
PATCHES_ENV = "ATTENTION_STUDIO_SERVER_PATCHES"  # "off": Streamlit as it ships, none of our patches of its server
INPUTS_ENV = "ATTENTION_STUDIO_INPUTS"
SHARED_CACHE_ENV = "ATTENTION_STUDIO_SHARED_CACHE_MB"  # the bytes decodes and stores shared across sessions may hold
SHARED_CACHE_MB = 2048
AUDIENCE_MODES = ("remote", "none", "all")  # who is audience: sessions from other machines, nobody, everybody


def checkpoints_root() -> Path:
    """Directory of the shipped (read-only) checkpoints."""
    return Path(os.environ.get(CHECKPOINTS_ENV) or APP_ROOT / "checkpoints")


def runs_root() -> Path:
    """Directory where runs saved from the Train page live."""
    return Path(os.environ.get(RUNS_ENV) or APP_ROOT / "runs")


def inputs_root() -> Path:
    """Directory where long inputs are kept by their hash, so a link carries the hash, never the text."""
    return Path(os.environ.get(INPUTS_ENV) or runs_root() / "inputs")


def hf_models_root() -> Path:
    """Directory whose Hugging Face model folders (save_pretrained layout) the picker lists."""
    return Path(os.environ.get(HF_MODELS_ENV) or APP_ROOT / "models")


def preferred_default(names: list[str]) -> str | None:
    """The shipped checkpoint the app opens on: $ATTENTION_STUDIO_DEFAULT, else the first of DEFAULT_ORDER."""
    wanted = os.environ.get(DEFAULT_ENV)
    if wanted and wanted in names:
        return wanted
    for name in DEFAULT_ORDER:
        if name in names:
            return name
    return names[0] if names else None


def public_url() -> str | None:
    """$ATTENTION_STUDIO_PUBLIC_URL: the address the room opens the studio at (share links and QR codes), or None."""
    return (os.environ.get(PUBLIC_URL_ENV) or "").strip().rstrip("/") or None


def server_patches() -> bool:
    """Whether the app patches Streamlit's server (TCP_NODELAY on its listeners, its static files from memory, the
    page's chunks preloaded, a link's decode read ahead): on unless ATTENTION_STUDIO_SERVER_PATCHES is off/0/false."""
    return (os.environ.get(PATCHES_ENV) or "on").strip().lower() not in ("off", "0", "false", "no")


def shared_cache_bytes() -> int:
    """The bound on the decodes, traces and stores the sessions share (least recently used dropped past it):
    $ATTENTION_STUDIO_SHARED_CACHE_MB megabytes, default 2,048."""
    try:
        mb = float(os.environ.get(SHARED_CACHE_ENV) or SHARED_CACHE_MB)
    except ValueError:
        mb = SHARED_CACHE_MB
    return max(int(mb * 2**20), 0)


def audience_mode() -> str:
    """$ATTENTION_STUDIO_AUDIENCE: which sessions are audience ("remote", the default, for an unknown value too)."""
    mode = (os.environ.get(AUDIENCE_ENV) or "").strip().lower()
    return mode if mode in AUDIENCE_MODES else "remote"


def _threads_setting() -> int:
    """$ATTENTION_STUDIO_TORCH_THREADS as a positive number, else 0 (unset or unreadable)."""
    try:
        return max(int(os.environ.get(THREADS_ENV, "0")), 0)
    except ValueError:
        return 0


def configure_torch() -> int:
    """Use $ATTENTION_STUDIO_TORCH_THREADS intra-op threads if set (else torch's default); returns the number.

    Many sessions' decoding shares the CPU with training processes. Spinning OpenMP threads made that collapse on
    2 cores (0.8 steps/s with 2 threads vs 39 with 1); `transformer` sets OMP_WAIT_POLICY=PASSIVE, which fixes it
    without giving up the second thread.
    """
    import torch

    threads = _threads_setting()
    if threads > 0 and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def max_training_processes() -> int:
    """Most data-parallel processes one app job may use: the machine's cores."""
    return max(1, os.cpu_count() or 1)


def training_threads() -> int:
    """Intra-op threads of a training process: $ATTENTION_STUDIO_TORCH_THREADS if set, else all cores but one.

    The spare core keeps the page scripts and the browser (on a laptop, the same machine) from slowing the
    training: on 2 cores, a 2-thread training process with the Train page open ran at 68 % of the CLI's speed,
    while one thread trains these small models nearly as fast as two (CLI: 63k vs 65k tokens/s).
    """
    return _threads_setting() or max(1, (os.cpu_count() or 2) - 1)


def configure_charts() -> None:
    """Skip Altair's schema validation as charts are built (the chart builders are validated by the tests)."""
    import altair as alt

    alt.utils.schemapi.disable_debug_mode()
