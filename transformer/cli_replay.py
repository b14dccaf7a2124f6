"""`decode --html PATH`: the decode as one offline replay page (see `transformer.charts.replay_html`)."""
from __future__ import annotations

import json
from pathlib import Path

from .charts import replay_html
from .cli_args import UsageError
from .decode import BeamTree, DecodeResult
from .store import is_checkpoint_folder, write_file_atomic


def weights_line(folder: str) -> str:
    """Which weights a model folder holds, e.g. "Weights of step 6,684 (last)"; other models are pretrained."""
    path = Path(folder).expanduser()
    if not is_checkpoint_folder(path):
        return f"Pretrained weights of {folder}"
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    step, which = config.get("step"), config.get("weights", "last")
    which = which if isinstance(which, str) else "last"
    return f"Weights of step {step:,} ({which})" if isinstance(step, int) else f"Weights: {which}"


def write_replay(path: str, result: DecodeResult, model_name: str, weights: str, beam: BeamTree | None = None
                 ) -> None:
    """Write the replay page of `result` (and the beam tree, with --beam) to `path`; ReplayTooLargeError when it is
    too long for one file."""
    page = replay_html(result, model_name, weights, beam)
    try:
        write_file_atomic(path, page)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
