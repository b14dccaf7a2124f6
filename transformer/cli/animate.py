"""`python -m transformer animate RUN_DIR --out FILE.mp4|.gif`: a run's training evolution, from the probe frames it
saved, as a video (1920x1080, a second a frame; `transformer.charts`'s animation)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..charts import SECONDS_PER_FRAME, animation_bytes, training_slides
from ..store import is_checkpoint_folder, load_probe_frames
from . import HELP
from .common import Commands, UsageError, add_video_view_arguments, video_head, video_target, write_output


def register(commands: Commands) -> None:
    """Add `animate` and its flags."""
    p = commands.add_parser("animate", help=HELP["animate"],
                            description="Draw the probe frames a training run saved (train --probe-frames, or the "
                            "Train page) as a video of how its attention formed: 1920x1080, one frame per slide.")
    p.add_argument("dir", metavar="RUN_DIR", help="a checkpoint saved with probe frames (train, or the Train page)")
    p.add_argument("--out", required=True, metavar="FILE", help="the video to write: FILE.mp4 (H.264) or FILE.gif")
    add_video_view_arguments(p, "")
    p.add_argument("--seconds-per-frame", type=float, default=SECONDS_PER_FRAME, metavar="S",
                   help=f"how long each frame shows (default {SECONDS_PER_FRAME:g})")
    p.set_defaults(run=run)


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


def run(args: argparse.Namespace) -> int:
    """`animate`: the probe frames a run saved, as a video of how its attention formed."""
    fmt = video_target(args.out)
    folder = Path(args.dir).expanduser()
    if not is_checkpoint_folder(folder):
        raise UsageError(f"{args.dir} is not a checkpoint directory")
    frames = load_probe_frames(folder)
    if not frames:
        raise UsageError(f"{args.dir} has no probe frames: it was saved before runs kept them or trained with "
                         "--probe-frames 0; resume it with train --resume to record some")
    slides = training_slides(frames, model=_run_name(folder), layer=args.layer - 1, head=video_head(args.head))
    write_output(args.out, animation_bytes(slides, fmt, args.seconds_per_frame))
    print(f"wrote {args.out}: {len(slides)} frames, steps {frames[0][0]:,} to {frames[-1][0]:,}, "
          f"{len(slides) * args.seconds_per_frame:g} s")
    return 0
