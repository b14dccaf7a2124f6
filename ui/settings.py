"""Where the app finds checkpoints and saved runs (overridable by environment variables)."""
from __future__ import annotations

import os
from pathlib import Path

APP_ROOT = Path(__file__).resolve().parent.parent
CHECKPOINTS_ENV = "ATTENTION_STUDIO_CHECKPOINTS"
RUNS_ENV = "ATTENTION_STUDIO_RUNS"
DEFAULT_ENV = "ATTENTION_STUDIO_DEFAULT"
DEFAULT_ORDER = ("toy-en-de", "reverse", "sort")
THREADS_ENV = "ATTENTION_STUDIO_TORCH_THREADS"


def checkpoints_root() -> Path:
    """Directory of the shipped (read-only) checkpoints."""
    return Path(os.environ.get(CHECKPOINTS_ENV) or APP_ROOT / "checkpoints")


def runs_root() -> Path:
    """Directory where runs saved from the Train page live."""
    return Path(os.environ.get(RUNS_ENV) or APP_ROOT / "runs")


def preferred_default(names: list[str]) -> str | None:
    """The shipped checkpoint the app opens on: $ATTENTION_STUDIO_DEFAULT, else the first of DEFAULT_ORDER."""
    wanted = os.environ.get(DEFAULT_ENV)
    if wanted and wanted in names:
        return wanted
    for name in DEFAULT_ORDER:
        if name in names:
            return name
    return names[0] if names else None


def configure_torch() -> int:
    """Use $ATTENTION_STUDIO_TORCH_THREADS intra-op threads (default 1); returns the number set.

    The server runs training jobs and many sessions' decoding at once; with several intra-op threads each,
    they oversubscribe a small CPU (measured on 2 cores: 0.8 steps/s with 2 threads vs 39 with 1).
    """
    import torch

    try:
        threads = max(1, int(os.environ.get(THREADS_ENV, "1")))
    except ValueError:
        threads = 1
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads
