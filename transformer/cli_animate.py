"""`animate RUN_DIR --out FILE.mp4|.gif` (a run's training evolution, from the probe frames it saved) and
`decode ... --video FILE.mp4|.gif` (the decode's step-through): 1920x1080, a second a frame (`transformer.charts`'s
animation)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .charts import SECONDS_PER_FRAME, animation_bytes, decode_slides, training_slides, video_format
from .cli_args import UsageError
from .decode import DecodeResult
from .store import is_checkpoint_folder, load_probe_frames, write_file_atomic


def parse_head(text: str | None) -> int | None:
    """A 1-based head number, or "mean" (None: the mean of heads), as a 0-based head or None."""
    if text is None or text.strip().lower() == "mean":
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise UsageError(f"a head is a number from 1 or 'mean', not {text!r}")
    return int(text) - 1


def video_target(path: str) -> str:
    """The format `path` asks for ("mp4" or "gif"), checked before any frame is drawn: its extension and folder."""
    fmt = video_format(path)
    if not Path(path).expanduser().resolve().parent.is_dir():
        raise UsageError(f"cannot write {path}: its folder does not exist")
    return fmt


def _write(path: str, data: bytes) -> None:
    try:
        write_file_atomic(path, data)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_decode_video(path: str, result: DecodeResult, model: str, *, layer: int, head: str | None,
                       seconds: float = SECONDS_PER_FRAME) -> None:
    """The step-through of `result` as a video at `path` (its extension picks MP4 or GIF)."""
    fmt = video_target(path)
    slides = decode_slides(result, model=model, layer=layer - 1, head=parse_head(head))
    _write(path, animation_bytes(slides, fmt, seconds))
    print(f"wrote {path}: {len(slides)} steps, {len(slides) * seconds:g} s", file=sys.stderr)


def _run_name(folder: Path) -> str:
    """What the video calls a run: its folder, task and steps trained (from config.json)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    task = (config.get("task_spec") or {}).get("name") if isinstance(config, dict) else None
    step = config.get("step") if isinstance(config, dict) else None
    parts = [folder.resolve().name, *([str(task)] if task else []),
             *([f"trained {step:,} steps"] if isinstance(step, int) else [])]
    return " · ".join(parts)


def cmd_animate(args: argparse.Namespace) -> int:
    """`animate`: the probe frames a run saved, as a video of how its attention formed."""
    fmt = video_target(args.out)
    folder = Path(args.dir).expanduser()
    if not is_checkpoint_folder(folder):
        raise UsageError(f"{args.dir} is not a checkpoint directory")
    frames = load_probe_frames(folder)
    if not frames:
        raise UsageError(f"{args.dir} has no probe frames: it was saved before runs kept them or trained with "
                         "--probe-frames 0; resume it with train --resume to record some")
    slides = training_slides(frames, model=_run_name(folder), layer=args.layer - 1, head=parse_head(args.head))
    _write(args.out, animation_bytes(slides, fmt, args.seconds_per_frame))
    print(f"wrote {args.out}: {len(slides)} frames, steps {frames[0][0]:,} to {frames[-1][0]:,}, "
          f"{len(slides) * args.seconds_per_frame:g} s")
    return 0
