"""`decode --html PATH` and `decode --video FILE`: the decode as one offline replay page (`transformer.charts.
replay_html`) or as its step-through in a video (1920x1080, a second a step; `transformer.charts`'s animation).

One replay path at every length: above the store's threshold the page is the replay's document mode (the app's
Download replay): the overview of each head of `--layer`, the region `--region ROWS,KEYS` with its weights recomputed
exactly from the store (by default the last 256 rows by the last 256 keys, as the app's document view opens), and each
decode step's row over every key; within the replay's 20 MB, refused in one line past it."""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ..charts import (
    REGION_MAX,
    REGION_SIDE,
    SECONDS_PER_FRAME,
    ReplayTooLargeError,
    animation_bytes,
    decode_slides,
    replay_html,
)
from ..decode import STORE_ABOVE, BeamTree, DecodeResult
from ..store import is_checkpoint_folder
from .common import UsageError, positive_int, video_head, video_target, write_output

_RANGE = r"\s*(\d[\d_]*)\s*-\s*(\d[\d_]*)\s*"
Region = tuple[int, int, int, int]  # first row, end row, first key, end key (ends excluded)


def add_html_arguments(dec: argparse.ArgumentParser) -> None:
    """--html, and --layer and --region: what a document's replay page shows."""
    dec.add_argument("--html", metavar="PATH", help="write one self-contained HTML page that replays the decode "
                     f"step by step, offline (above {STORE_ABOVE:,} prompt tokens: the long replay page)")
    dec.add_argument("--layer", type=positive_int, metavar="N",
                     help=f"--html above {STORE_ABOVE:,} prompt tokens: the layer (from 1, default 1) whose heads the "
                          "long replay page shows")
    dec.add_argument("--region", metavar="ROWS,KEYS",
                     help=f"--html above {STORE_ABOVE:,} prompt tokens: the region whose exact weights the page holds, "
                          "0-based first-last rows and keys as the app's zoom= (e.g. 686-1159,302-720; at most "
                          f"{REGION_MAX:,} a side); default the last {REGION_SIDE} rows by the last {REGION_SIDE} keys")


def _document_flags(args: argparse.Namespace) -> list[str]:
    return [flag for flag, value in (("--layer", args.layer), ("--region", args.region)) if value is not None]


def check_html_flags(args: argparse.Namespace) -> None:
    """Before the model loads: --layer and --region need --html, and the region reads as ROWS,KEYS."""
    given = _document_flags(args)
    if given and not args.html:
        raise UsageError(f"{', '.join(given)}: only with --html (the long replay page)")
    if args.region is not None:
        parse_region(args.region)


def html_conflict(args: argparse.Namespace, long: bool, layers: int) -> str | None:
    """Before the decode: why --layer or --region cannot be used (a short input's replay holds every layer; a layer
    the model has not got), or None."""
    given = _document_flags(args)
    if given and not long:
        return (f"{', '.join(given)}: only above {STORE_ABOVE:,} prompt tokens (the replay of a shorter input holds "
                "every layer and every weight)")
    if args.layer is not None and args.layer > layers:
        return f"--layer {args.layer}: this model has layers 1-{layers}"
    return None


def parse_region(text: str) -> Region:
    """ROWS,KEYS as 0-based first-last each (`686-1159,302-720`) -> (first row, end row, first key, end key)."""
    found = re.fullmatch(_RANGE + "," + _RANGE, text)
    if found is None:
        raise UsageError(f"--region {text!r}: give ROWS,KEYS as first-last, e.g. 686-1159,302-720")
    r0, r_last, k0, k_last = (int(v.replace("_", "")) for v in found.groups())
    if r_last < r0 or k_last < k0:
        raise UsageError(f"--region {text!r}: each range runs from its first to its last position")
    if max(r_last - r0, k_last - k0) + 1 > REGION_MAX:
        raise UsageError(f"--region {text!r}: at most {REGION_MAX:,} rows and {REGION_MAX:,} keys")
    return r0, r_last + 1, k0, k_last + 1


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


def write_replay(path: str, result: DecodeResult, model_name: str, weights: str, args: argparse.Namespace,
                 beam: BeamTree | None = None) -> None:
    """Write the replay page of `result` (and the beam tree, with --beam; a document's at --layer and --region) to
    `path`: ReplayTooLargeError (naming the limit) when it is too big for one file, UsageError for a region outside
    the input."""
    layer = args.layer or 1
    region = None if args.region is None else parse_region(args.region)  # None: the last rows by the last keys
    try:
        page = replay_html(result, model_name, weights, beam, layer=layer - 1, region=region)
    except ReplayTooLargeError as exc:
        raise ReplayTooLargeError(str(exc).replace("Zoom to a smaller region.", "Give fewer --max-steps or a "
                                                   "smaller --region.")) from None
    except ValueError as exc:
        if region is None:
            raise
        raise UsageError(f"--region: {exc}") from None  # a region outside the input
    write_output(path, page)


def write_decode_video(path: str, result: DecodeResult, model: str, *, layer: int, head: str | None,
                       seconds: float = SECONDS_PER_FRAME) -> None:
    """The step-through of `result` as a video at `path` (its extension picks MP4 or GIF)."""
    fmt = video_target(path)
    slides = decode_slides(result, model=model, layer=layer - 1, head=video_head(head))
    write_output(path, animation_bytes(slides, fmt, seconds))
    print(f"wrote {path}: {len(slides)} steps, {len(slides) * seconds:g} s", file=sys.stderr)
