"""The demo as a video: a decode's step-through or a run's training evolution, one 1920x1080 slide a frame (the
slides export's titles and legibility, drawn by vl-convert, no browser), encoded as an H.264 MP4 or a GIF.

A decode gets a frame per output step: the map's rows up to that step (the step's row outlined) beside the step's
top-k. A training run gets a frame per probe recording: the probe's map as the model saw it at that step.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import altair as alt

from ..analysis import whole_maps
from ..decode import AttentionTrace, DecodeResult, head_label
from ..model import ALL_TITLES, ModelFamily
from .attention import attention_heatmap
from .slides import slide_png
from .step import topk_bars
from .style import visible_token
from .video import VideoError, video_bytes

MAX_ANIMATION_FRAMES = 120  # two minutes at a second a frame
SECONDS_PER_FRAME = 1.0
_MAP_PX = 440


class AnimationError(VideoError):
    """An animation that cannot be made from this input (no frames, too many, a layer or head it lacks)."""


@dataclass(frozen=True)
class Slide:
    """One frame of an animation: a chart and the title lines above it."""

    chart: alt.TopLevelMixin | dict[str, Any]
    title_lines: tuple[str, ...]


def animated_kind(family: ModelFamily) -> str:
    """The kind an animation shows: cross-attention where the model has it, else the decoder's own."""
    kind = family.cross_kind or family.decoder_kind
    if kind is None:
        raise ValueError(f"a {family.name} model does not decode: there are no steps to animate")
    return kind


def _check(trace: AttentionTrace, kind: str, layer: int, head: int | None) -> None:
    if kind not in trace.kinds:
        raise AnimationError(f"this model has no {kind} attention (it has {', '.join(trace.kinds)})")
    if not 0 <= layer < trace.n_layers(kind):
        raise AnimationError(f"layer {layer + 1} is not there: the model has {trace.n_layers(kind)} layer(s)")
    if head is not None and not 0 <= head < trace.n_heads:
        raise AnimationError(f"head {head + 1} is not there: the model has {trace.n_heads} head(s)")


def _check_count(count: int, what: str) -> None:
    if count == 0:
        raise AnimationError(f"there is nothing to animate: {what}")
    if count > MAX_ANIMATION_FRAMES:
        raise AnimationError(f"an animation has at most {MAX_ANIMATION_FRAMES} frames; this one would have {count} "
                             f"{what}")


def _view(kind: str, layer: int, head: int | None) -> str:
    return f"{ALL_TITLES[kind]} · layer {layer + 1} · {head_label(head).lower()}"


def _words(tokens: Sequence[str]) -> str:
    return " ".join(visible_token(t) for t in tokens)


def side_by_side(*charts: alt.TopLevelMixin, spacing: int = 48) -> dict[str, Any]:
    """One Vega-Lite spec drawing `charts` in a row, top-aligned: their datasets, parameters (the token labels) and
    configs lifted to the top (a concatenated chart may not set autosize, a top-level property)."""
    combined: dict[str, Any] = {"hconcat": [], "spacing": spacing, "datasets": {}, "params": {}, "config": {}}
    for chart in charts:
        spec = chart.to_dict(validate=False)  # the builders are validated by their tests
        combined["$schema"] = spec.pop("$schema", None)
        combined["autosize"] = spec.pop("autosize", None)
        combined["datasets"].update(spec.pop("datasets", {}))
        combined["params"].update({param["name"]: param for param in spec.pop("params", [])})
        for part, settings in spec.pop("config", {}).items():
            combined["config"].setdefault(part, {}).update(settings) if isinstance(settings, dict) else \
                combined["config"].setdefault(part, settings)
        combined["hconcat"].append(spec)
    combined["params"] = list(combined["params"].values()) or None
    return {k: v for k, v in combined.items() if v is not None}


def decode_slides(result: DecodeResult, *, model: str, layer: int = 0, head: int | None = None,
                  kind: str | None = None, reference: str | None = None) -> list[Slide]:
    """A slide per output step of `result`: the map of `kind` (default: cross-attention, else the decoder's) with
    its rows up to the step, beside the step's top-k; titled with the kind, layer and head, the step, the input and
    `model`."""
    trace = result.trace
    kind = kind or animated_kind(trace.family)
    _check(trace, kind, layer, head)
    whole_maps(trace, "animation", kind)  # each slide draws a whole map: refused past what can be materialised
    n = len(result.steps)
    _check_count(n, "output steps")
    slides = []
    for t, step in enumerate(result.steps):
        row = trace.step_offset + t
        heatmap = attention_heatmap(trace, kind, layer, head, max_row=row, highlight_row=row, size=_MAP_PX, title="")
        chart = side_by_side(heatmap, topk_bars(step.top_k, chosen=step.token, width=260)) if step.top_k else heatmap
        fed = trace.decoder_input_tokens[row]
        lines = [f"{_view(kind, layer, head)} · step {t + 1} of {n}",
                 f"Step {t + 1}: ‹{visible_token(fed)}› → ‹{visible_token(step.token)}› ({step.prob:.1%}) · output so "
                 f"far: {_words(result.output_tokens[: t + 1])}",
                 f"Input: {result.source_text}"]
        if reference:
            lines.append(f"Decoder fed the reference: {reference}")
        slides.append(Slide(chart, (*lines, model)))
    return slides


def training_slides(frames: Sequence[tuple[int, AttentionTrace]], *, model: str, layer: int = 0,
                    head: int | None = None, kind: str | None = None) -> list[Slide]:
    """A slide per probe recording of a training run (oldest first): the probe's map of `kind` at that step, titled
    with the kind, layer and head, the step, the probe and its output then, and `model`."""
    _check_count(len(frames), "the run has no probe frames (runs saved before frames were kept have none)")
    slides = []
    for i, (step, trace) in enumerate(frames):
        shown = kind or animated_kind(trace.family)
        _check(trace, shown, layer, head)
        output = trace.decoder_input_tokens[trace.step_offset + 1:]
        lines = (f"{_view(shown, layer, head)} · training step {step:,} ({i + 1} of {len(frames)})",
                 f"Probe: {_words(trace.source_tokens)}",
                 f"Output at step {step:,}: {_words(output) or '(none yet)'}", model)
        chart = attention_heatmap(trace, shown, layer, head, size=_MAP_PX, title="").to_dict(validate=False)
        slides.append(Slide(chart, lines))
    return slides


def slide_frames(slides: Sequence[Slide], workers: int = 2) -> Iterator[bytes]:
    """Each slide as a 1920x1080 PNG, in order, `workers` drawn at once (vl-convert draws outside the GIL: two at a
    time took ~0.7 of the time one after another on two busy cores)."""
    with ThreadPoolExecutor(max(1, min(workers, os.cpu_count() or 1))) as pool:
        yield from pool.map(lambda slide: slide_png(slide.chart, slide.title_lines), slides)


def animation_bytes(slides: Sequence[Slide], fmt: str, seconds_per_frame: float = SECONDS_PER_FRAME) -> bytes:
    """The slides as an animation, "mp4" (H.264) or "gif", one slide each `seconds_per_frame`."""
    _check_count(len(slides), "no slides")
    return video_bytes(slide_frames(slides), fmt, seconds_per_frame)
