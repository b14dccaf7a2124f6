"""A checkpoint's saved metrics (config.json's "metrics": what the model card shows) rewritten in place, as after a
fresh evaluation of the same weights (`eval DIR --save`); no other file, the weights least of all, is touched."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .atomic import write_file_atomic
from .checkpoint_format import CONFIG, CheckpointError, finite_json, read_config


def write_metrics(path: str | Path, metrics: dict[str, Any]) -> dict[str, Any]:
    """Replace the metrics in the checkpoint at `path` with `metrics` (config.json rewritten atomically: a reader sees
    the old file or the new one); the rest of config.json is kept as it was. CheckpointError for a folder that is
    not a checkpoint."""
    folder = Path(path)
    read_config(folder)  # a checkpoint's config, or CheckpointError
    try:
        config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{folder / CONFIG}: {exc}") from None
    config["metrics"] = dict(metrics)
    try:
        mode = stat.S_IMODE((folder / CONFIG).stat().st_mode)
        write_file_atomic(folder / CONFIG, json.dumps(finite_json(config), indent=2, ensure_ascii=False))
        os.chmod(folder / CONFIG, mode)  # the temporary file's 0600 would hide it from other users
    except OSError as exc:
        raise CheckpointError(f"cannot write {folder / CONFIG}: {exc.strerror or exc}") from None
    return config["metrics"]
