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

from ..model import build_model
from ..store import Checkpoint, CheckpointError, list_checkpoints, save_checkpoint
from .resume import checkpoint_from_trainer
from .runs import LiveRun

AUTOSAVE_PREFIX = "autosave-"
MAX_AUTOSAVES = 8
AUTOSAVE_EVERY_S = 30.0


def autosave_name(run: LiveRun) -> str:
    """The folder name of a run's autosave (a valid run name; one per run, overwritten as it trains)."""
    return f"{AUTOSAVE_PREFIX}{run.task_name}-{run.id[:8]}"


def checkpoint_from_state(run: LiveRun, state: dict[str, Any]) -> Checkpoint:
    """A checkpoint from a training process's `Trainer.state()`, with the history the server has so far."""
    trainer, task = run.trainer, run.trainer.task
    model = build_model(trainer.model_cfg)
    model.load_state_dict(state["model"])
    model.eval()
    snap = run.job.snapshot()
    return Checkpoint(model, trainer.model_cfg, trainer.cfg, task.src_tokenizer, task.tgt_tokenizer, dict(task.spec),
                      int(state["step"]), float(state["elapsed"]), dict(snap.evals[-1]) if snap.evals else {},
                      [dict(r) for r in snap.history if r.get("step", 0) <= state["step"]],
                      [dict(r) for r in snap.evals if r.get("step", 0) <= state["step"]], state["optimizer"],
                      frames=[(step, trace) for step, trace in run.timeline() if step <= state["step"]])


def autosave(run: LiveRun, root: Path, state: dict[str, Any] | None = None, *, keep: int = MAX_AUTOSAVES
             ) -> Path | None:
    """Write the run to root/autosave-... (from `state` mid-run, else from its trainer between jobs), then prune.

    Returns the folder, or None when there was nothing to keep (no step trained) or the disk refused."""
    with run.lock:
        step = state["step"] if state is not None else run.trainer.step
        if step == 0:
            return None
        ckpt = checkpoint_from_state(run, state) if state is not None else \
            checkpoint_from_trainer(run.trainer, run.timeline())
        try:
            path = save_checkpoint(ckpt, Path(root) / autosave_name(run), overwrite=True)
        except (CheckpointError, OSError):
            return None  # a full or read-only disk must not end the run; the run stays in memory
        run.autosaved_as = path.name
    prune_autosaves(root, keep=keep, keep_path=path)
    return path


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
