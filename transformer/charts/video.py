"""Still images to a video: H.264 MP4 (PyAV, libx264) or an animated GIF (Pillow), each still shown for a set time.

Frames arrive one at a time (an iterator of PNG bytes or Pillow images), so a long animation is never held as raw
pixels at once for the MP4; a GIF keeps its frames' palette images (1 byte a pixel) until it is written.
"""
from __future__ import annotations

import io
import itertools
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pandas as pd
from PIL import Image

VIDEO_FORMATS = ("mp4", "gif")
MIME_TYPES = {"mp4": "video/mp4", "gif": "image/gif"}
_X264 = {"crf": "20", "preset": "veryfast", "tune": "stillimage"}  # veryfast: a third of medium's time, same size


class VideoError(ValueError):
    """A video cannot be made (an unknown format, no frames, frames of different sizes); one line for the user."""


def video_format(path: str | Path) -> str:
    """The format a file name asks for ("mp4" or "gif", from its extension); VideoError for any other."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in VIDEO_FORMATS:
        given = f".{suffix}" if suffix else "a name without an extension"
        raise VideoError(f"{path}: a video is written as .mp4 (H.264) or .gif, not {given}")
    return suffix


def _images(frames: Iterable[bytes | Image.Image]) -> Iterator[Image.Image]:
    size = None
    for frame in frames:
        image = Image.open(io.BytesIO(frame)) if isinstance(frame, (bytes, bytearray)) else frame
        image = image.convert("RGB")
        if size is not None and image.size != size:
            raise VideoError(f"the frames differ in size ({size[0]}x{size[1]}, then {image.size[0]}x{image.size[1]})")
        size = image.size
        yield image


def _frame_rate(seconds: float) -> Fraction:
    if not 0.05 <= seconds <= 60:
        raise VideoError(f"each frame is shown for 0.05 to 60 seconds, not {seconds:g}")
    return 1 / Fraction(seconds).limit_denominator(1000)


def mp4_bytes(frames: Iterable[bytes | Image.Image], seconds_per_frame: float = 1.0) -> bytes:
    """An H.264 MP4 (yuv420p, libx264, moov atom first so it plays while it downloads), one frame each
    `seconds_per_frame`; VideoError without frames."""
    rate = _frame_rate(seconds_per_frame)
    with tempfile.TemporaryDirectory(prefix="attention-studio-video-") as folder:
        path = Path(folder) / "video.mp4"  # faststart moves the index to the front: FFmpeg reopens the file by name
        _write_mp4(path, frames, rate)
        return path.read_bytes()


def _write_mp4(path: Path, frames: Iterable[bytes | Image.Image], rate: Fraction) -> None:
    import av  # noqa: PLC0415 - PyAV loads FFmpeg's libraries: only when a video is made

    images = _images(frames)
    first = next(images, None)
    if first is None:
        raise VideoError("there are no frames to make a video of")
    if first.width % 2 or first.height % 2:
        raise VideoError(f"H.264 needs even sizes, not {first.width}x{first.height}")
    with av.open(str(path), mode="w", format="mp4", options={"movflags": "+faststart"}) as container:
        stream = container.add_stream("libx264", rate=rate, options=dict(_X264))
        stream.width, stream.height, stream.pix_fmt = first.width, first.height, "yuv420p"
        for count, image in enumerate(itertools.chain([first], images)):
            frame = av.VideoFrame.from_ndarray(np.asarray(image), format="rgb24")
            frame.pts = count
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def _colour_codes(image: Image.Image) -> np.ndarray:
    """Each pixel's colour as one integer, 0xBBGGRR, row by row."""
    return np.frombuffer(image.convert("RGBX").tobytes(), dtype="<u4") & 0xFFFFFF


def _channels(codes: np.ndarray) -> np.ndarray:
    return np.stack([codes & 255, (codes >> 8) & 255, (codes >> 16) & 255], axis=-1).astype(np.int64)


def _palette_lookup(counts: pd.Series, size: int = 256) -> tuple[list[int], np.ndarray]:
    """The `size` most common colours as the palette (a chart is flat colours: white, cells, text, bars; the rest is
    anti-aliasing), and a lookup from every colour seen to its nearest palette entry, exactly (Pillow's own palette
    lookup is approximate: white came out as a near-white that was also in the palette)."""
    palette = _channels(counts.nlargest(size).index.to_numpy())
    seen = counts.index.to_numpy()
    lookup = np.zeros(1 << 24, dtype=np.uint8)
    for start in range(0, len(seen), 4096):  # (chunk, palette) distances at a time
        chunk = seen[start:start + 4096]
        distance = ((_channels(chunk)[:, None, :] - palette[None, :, :]) ** 2).sum(axis=2)
        lookup[chunk] = distance.argmin(axis=1)
    return palette.ravel().tolist(), lookup


def gif_bytes(frames: Iterable[bytes | Image.Image], seconds_per_frame: float = 1.0) -> bytes:
    """An animated GIF that loops, one frame each `seconds_per_frame`, every frame in one palette: the 256 colours
    most used over all frames (no dithering: flat cells and crisp text); VideoError without frames."""
    _frame_rate(seconds_per_frame)
    frames = list(frames)  # PNGs are small: each is decoded twice (its colours, then the frame), never kept as pixels
    if not frames:
        raise VideoError("there are no frames to make a video of")
    counts = pd.Series(dtype=np.int64)
    for image in _images(frames):
        counts = counts.add(pd.Series(_colour_codes(image)).value_counts(), fill_value=0)
    palette, lookup = _palette_lookup(counts)
    stills = []
    for image in _images(frames):
        still = Image.fromarray(lookup[_colour_codes(image)].reshape(image.height, image.width), mode="P")
        still.putpalette(palette)
        stills.append(still)
    out = io.BytesIO()
    stills[0].save(out, format="GIF", save_all=True, append_images=stills[1:], loop=0,
                   duration=int(round(seconds_per_frame * 1000)), disposal=1, optimize=False)
    return out.getvalue()


def video_bytes(frames: Iterable[bytes | Image.Image], fmt: str, seconds_per_frame: float = 1.0) -> bytes:
    """`mp4_bytes` or `gif_bytes` by format name."""
    if fmt not in VIDEO_FORMATS:
        raise VideoError(f"a video is made as {' or '.join(VIDEO_FORMATS)}, not {fmt!r}")
    return (mp4_bytes if fmt == "mp4" else gif_bytes)(frames, seconds_per_frame)
