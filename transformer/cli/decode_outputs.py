"""`decode --html PATH` and `decode --video FILE`: the decode as one offline replay page (`transformer.charts.
replay_html`) or as its step-through in a video (1920x1080, a second a step; `transformer.charts`'s animation)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..charts import SECONDS_PER_FRAME, animation_bytes, decode_slides, replay_html
from ..decode import BeamTree, DecodeResult
from ..store import is_checkpoint_folder
from .common import video_head, video_target, write_output


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
    write_output(path, replay_html(result, model_name, weights, beam))


def write_decode_video(path: str, result: DecodeResult, model: str, *, layer: int, head: str | None,
                       seconds: float = SECONDS_PER_FRAME) -> None:
    """The step-through of `result` as a video at `path` (its extension picks MP4 or GIF)."""
    fmt = video_target(path)
    slides = decode_slides(result, model=model, layer=layer - 1, head=video_head(head))
    write_output(path, animation_bytes(slides, fmt, seconds))
    print(f"wrote {path}: {len(slides)} steps, {len(slides) * seconds:g} s", file=sys.stderr)
