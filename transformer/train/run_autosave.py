"""Autosaves of live runs: a run nobody saved is kept on disk as `autosave-...`, the oldest pruned first.

A run is autosaved whenever one of its jobs ends (budget spent, stopped, failed with weights to keep) and, while
it trains, every `AUTOSAVE_EVERY_S` seconds from the training state its process sends, so a server that is
killed loses at most the steps since the last autosave. At most `MAX_AUTOSAVES` autosaved runs are kept per
runs folder; beyond that the oldest (by the time it was written) are deleted.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..store import SNAPSHOTS, Checkpoint, CheckpointError, list_checkpoints, save_checkpoint, snapshot_name
from .resume import checkpoint_from_state
from .runs import LiveRun

AUTOSAVE_PREFIX = "autosave-"
MAX_AUTOSAVES = 8
AUTOSAVE_EVERY_S = 30.0


def autosave_name(run: LiveRun) -> str:
    """The folder name of a run's autosave (a valid run name; one per run, overwritten as it trains)."""
    return f"{AUTOSAVE_PREFIX}{run.task_name}-{run.id[:8]}"


def run_checkpoint(run: LiveRun, state: dict[str, Any] | None = None) -> Checkpoint:
    """The run as a checkpoint with its probe frames: from a training process's `Trainer.state()` mid-run, with the
    history the server has so far, or (None) from the run's record between jobs."""
    plan = run.plan
    if state is None:
        record = run.record
        state, history, evals = record.state, record.history, record.evals
    else:
        snap = run.job.snapshot()
        history, evals = list(snap.history), list(snap.evals)
    return checkpoint_from_state(plan.task, plan.model_cfg, plan.train_cfg, state, history, evals, run.timeline())


def autosave(run: LiveRun, root: Path, state: dict[str, Any] | None = None, *, keep: int = MAX_AUTOSAVES
             ) -> Path | None:
    """Write the run to root/autosave-... (from `state` mid-run, else from its record between jobs), then prune.

    Returns the folder, or None when there was nothing to keep (no step trained) or the disk refused."""
    with run.lock:
        step = state["step"] if state is not None else run.record.step
        if step == 0:
            return None
        ckpt = run_checkpoint(run, state)
        try:
            path = save_checkpoint(ckpt, Path(root) / autosave_name(run), overwrite=True)
        except (CheckpointError, OSError):
            return None  # a full or read-only disk must not end the run; the run stays in memory
        run.autosaved_as = path.name
    prune_autosaves(root, keep=keep, keep_path=path)
    return path


def keep_snapshot(run: LiveRun, root: Path, state: dict[str, Any] | None = None) -> Path | None:
    """Keep the run's weights (from `state` mid-run, else its record) as a snapshot in its autosave folder,
    root/autosave-.../snapshots/step-NNNNNNN/ (the Train page's "Keep weight snapshots"; `save_checkpoint` carries
    them over when the autosave is replaced). None when there was nothing to keep or the disk refused."""
    with run.lock:
        step = state["step"] if state is not None else run.record.step
        folder = Path(root) / autosave_name(run) / SNAPSHOTS / snapshot_name(int(step))
        if step == 0 or folder.is_dir():
            return None
        ckpt = run_checkpoint(run, state)
        ckpt.optimizer_state = None
        try:
            return save_checkpoint(ckpt, folder)
        except (CheckpointError, OSError):
            return None


def prune_autosaves(root: Path, *, keep: int = MAX_AUTOSAVES, keep_path: Path | None = None) -> list[Path]:
    """Delete the oldest autosaves beyond the newest `keep` (never `keep_path`); returns what was deleted."""
    autosaves = [p for p in list_checkpoints(root) if p.name.startswith(AUTOSAVE_PREFIX)]
    autosaves.sort(key=_written, reverse=True)
    doomed = [p for p in autosaves[keep:] if p != keep_path]
    for path in doomed:
        shutil.rmtree(path, ignore_errors=True)
    return doomed


def _written(path: Path) -> float:
    try:
        return (path / "config.json").stat().st_mtime
    except OSError:
        return 0.0
