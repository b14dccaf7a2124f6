"""A run's probe frames beside its weights: the probe sentence's attention recorded during training, frame by frame.

One file, ``probe_frames.safetensors``: each frame's maps as fp16 tensors named ``frame.<i>.<kind>``
((layers, heads, queries, keys), rows are queries), and in the header's metadata, under ``"frames"``, a JSON list
of ``{"step", "family", "source_tokens", "decoder_input_tokens", "head_groups", "step_offset"}``, one per frame,
oldest first. Bounded: at most MAX_PROBE_FRAMES frames and MAX_PROBE_FRAME_VALUES numbers in all, evenly thinned
(the first and the last frame kept). Read back validated like every checkpoint file; nothing is unpickled.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from ..decode import AttentionTrace
from .atomic import fsync_path
from .checkpoint_format import CheckpointError

MAX_PROBE_FRAMES = 60  # a minute of video at a second a frame
MAX_PROBE_FRAME_VALUES = 4_000_000  # attention weights over all frames: at most 8 MB in fp16
_MAX_TOKENS = 4096  # per axis of one frame
Frames = list[tuple[int, AttentionTrace]]


class ProbeFramesError(CheckpointError):
    """A probe frames file that cannot be read; the message names the file."""


def _values(trace: AttentionTrace) -> int:
    return sum(w.numel() for w in trace.maps.values())


def thin_frames(frames: Sequence[tuple[int, AttentionTrace]], limit: int = MAX_PROBE_FRAMES,
                max_values: int = MAX_PROBE_FRAME_VALUES) -> Frames:
    """At most `limit` frames holding at most `max_values` weights, evenly spaced over the run (first and last kept),
    oldest first; one step recorded twice keeps its newer frame."""
    ordered = sorted(dict(frames).items(), key=lambda item: item[0])
    count = min(len(ordered), limit)
    while count > 0:
        if count == len(ordered):
            kept = ordered
        else:
            index = np.unique(np.linspace(0, len(ordered) - 1, count).round().astype(int))
            kept = [ordered[i] for i in index]
        if sum(_values(trace) for _, trace in kept) <= max_values:
            return kept
        count -= 1
    return []


def write_probe_frames(path: Path, frames: Sequence[tuple[int, AttentionTrace]]) -> None:
    """Write `frames` (thinned to the bounds) as one safetensors file and fsync it."""
    tensors, entries = {}, []
    for i, (step, trace) in enumerate(thin_frames(frames)):
        entries.append({"step": int(step), "family": trace.family_name, "source_tokens": list(trace.source_tokens),
                        "decoder_input_tokens": list(trace.decoder_input_tokens),
                        "head_groups": {k: list(v) for k, v in trace.head_groups.items()},
                        "step_offset": trace.step_offset})
        for kind, weights in trace.maps.items():
            tensors[f"frame.{i}.{kind}"] = weights.detach().to("cpu", torch.float16).contiguous()
    save_file(tensors, str(path), metadata={"frames": json.dumps(entries, ensure_ascii=False)})
    fsync_path(path)


def _require(ok: bool, path: Path, message: str) -> None:
    if not ok:
        raise ProbeFramesError(f"{path}: {message}")


def _tokens(value: Any, path: Path, where: str, least: int = 1) -> list[str]:
    _require(isinstance(value, list) and least <= len(value) <= _MAX_TOKENS and all(isinstance(t, str) for t in value),
             path, f"{where} must be a list of {least} to {_MAX_TOKENS} strings")
    return value


def _entries(path: Path, metadata: dict[str, str] | None) -> list[dict]:
    try:
        entries = json.loads((metadata or {})["frames"])
    except (KeyError, TypeError, ValueError):
        raise ProbeFramesError(f'{path}: the header has no "frames" list') from None
    _require(isinstance(entries, list) and len(entries) <= MAX_PROBE_FRAMES, path,
             f'"frames" must be a list of at most {MAX_PROBE_FRAMES} frames')
    steps: list[Any] = [e.get("step") if isinstance(e, dict) else None for e in entries]
    _require(all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in steps), path,
             "every frame needs a non-negative integer step")
    _require(steps == sorted(set(steps)), path, "frames must be in increasing order of step, one per step")
    return entries


def read_probe_frames(path: Path) -> Frames:
    """The frames of a probe frames file, oldest first, each a shape-checked trace; ProbeFramesError otherwise."""
    if not path.is_file():
        raise ProbeFramesError(f"{path}: file is missing")
    try:
        with safe_open(str(path), framework="pt") as fh:
            entries = _entries(path, fh.metadata())
            names = set(fh.keys())
            shapes = {name: tuple(fh.get_slice(name).get_shape()) for name in names}
            _require(sum(math.prod(s) for s in shapes.values()) <= MAX_PROBE_FRAME_VALUES, path,
                     f"more than {MAX_PROBE_FRAME_VALUES:,} attention weights")
            dtypes = {fh.get_slice(name).get_dtype() for name in names}
            _require(dtypes <= {"F16", "BF16", "F32"}, path, "attention weights must be floating point")
            tensors = {name: fh.get_tensor(name).float() for name in names}
    except (SafetensorError, OSError) as exc:
        raise ProbeFramesError(f"{path}: not a valid safetensors file ({exc})") from None
    frames, used = [], set()
    for i, entry in enumerate(entries):
        family, groups = entry.get("family"), entry.get("head_groups") or {}
        _require(isinstance(groups, dict), path, f"frame {i + 1}: head_groups must be an object")
        maps = {name.split(".", 2)[2]: tensor for name, tensor in tensors.items() if name.startswith(f"frame.{i}.")}
        used |= {f"frame.{i}.{kind}" for kind in maps}
        for kind, weights in maps.items():
            _require(weights.numel() == 0 or (bool(torch.isfinite(weights).all()) and float(weights.min()) >= 0
                                              and float(weights.max()) <= 1.01), path,
                     f"frame {i + 1}: {kind} weights must be finite and between 0 and 1")
        try:
            trace = AttentionTrace(_tokens(entry.get("source_tokens"), path, f"frame {i + 1}: source_tokens"),
                                   _tokens(entry.get("decoder_input_tokens"), path,  # none: an encoder-only model
                                           f"frame {i + 1}: decoder_input_tokens", int(family != "encoder-only")),
                                   maps=maps, family=family if isinstance(family, str) else "?",
                                   head_groups=groups,
                                   step_offset=entry.get("step_offset", 0))
        except (ValueError, TypeError) as exc:
            raise ProbeFramesError(f"{path}: frame {i + 1}: {exc}") from None
        frames.append((entry["step"], trace))
    _require(used == set(tensors), path, f"tensor(s) {', '.join(sorted(set(tensors) - used)[:3])} belong to no frame")
    return frames
