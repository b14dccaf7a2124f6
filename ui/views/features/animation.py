""""Download animation": a decode's step-through or a training run's probe frames as an H.264 MP4 or a GIF at
1920x1080, a second a frame, made only when a button is clicked (`transformer.charts` draws and encodes it)."""
from __future__ import annotations

import re
from typing import Callable, Sequence

import streamlit as st

from transformer.charts import (
    MAX_ANIMATION_FRAMES,
    MIME_TYPES,
    SECONDS_PER_FRAME,
    Slide,
    animated_kind,
    animation_bytes,
    decode_slides,
)
from ui.server import audience_refusal

from ..kit import SLIDES_SUFFIX, Selection, head_label, kind_title

_FORMATS = (("MP4 (H.264)", "mp4", ":material/movie:"), ("GIF", "gif", ":material/gif_box:"))


def file_stem(text: str, layer: int, head: int | None) -> str:
    """A safe file name (no extension) of `text`, the layer and the head: "animation_reverse_layer1_head2"."""
    stem = f"{text}_layer{layer + 1}_{'mean' if head is None else f'head{head + 1}'}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-")


def animation_downloads(make_slides: Callable[[], Sequence[Slide]], frames: int, stem: str, key: str,
                        what: str) -> None:
    """A "Download animation" popover with an MP4 and a GIF button, each file made only when clicked from the slides
    `make_slides` returns (`frames` of them, `what` they show). Hidden in presenter mode (its key ends in
    SLIDES_SUFFIX); more frames than an animation holds get a caption instead; switched off for the audience."""
    if frames > MAX_ANIMATION_FRAMES:
        st.caption(f"No animation of this: it would have {frames} frames; an animation has at most "
                   f"{MAX_ANIMATION_FRAMES}.")
        return

    def make(fmt: str) -> Callable[[], bytes]:
        return lambda: animation_bytes(make_slides(), fmt)

    why = audience_refusal("render")
    if why:  # an MP4 costs the speaker's machine seconds of CPU: not the room's to ask for
        st.popover("Download animation", icon=":material/movie:", type="tertiary", key=f"{key}{SLIDES_SUFFIX}",
                   disabled=True, help=why)
        return
    seconds = frames * SECONDS_PER_FRAME
    with st.popover("Download animation", icon=":material/movie:", type="tertiary", key=f"{key}{SLIDES_SUFFIX}",
                    help="A video for slides or a fallback when the demo cannot run live: 1920×1080, a second a "
                         "frame, titled like the slides."):
        st.caption(f"{what}: {frames} frame{'s' * (frames != 1)}, {seconds:g} s at 1920×1080. Made when you click "
                   "(a few seconds).")
        for label, fmt, icon in _FORMATS:
            st.download_button(label, data=make(fmt), file_name=f"{stem}.{fmt}", mime=MIME_TYPES[fmt],
                               key=f"{key}{SLIDES_SUFFIX}_{fmt}", icon=icon, on_click="ignore", width="stretch")


def decode_animation(sel: Selection) -> None:
    """The Decode page's "Download animation": the decode stepped through (`sel.result`, the output `sel.mode`), the
    map of the chosen layer and head beside each step's top-k."""
    result, layer, head, title = sel.result, sel.layer, sel.head, sel.title
    kind = animated_kind(result.trace.family)
    what = f"Every step of this decode: {kind_title(kind).lower()} of layer {layer + 1}, " \
           f"{head_label(head, spelled=True).lower()}, beside the top-k"
    stem = file_stem(f"animation_{sel.model.option.name}_{sel.mode}", layer, head)
    animation_downloads(lambda: decode_slides(result, model=title.model, layer=layer, head=head,
                                              reference=title.reference),
                        len(result.steps), stem, "decode_animation", what)
