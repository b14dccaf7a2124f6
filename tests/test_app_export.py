"""AppTest: what a view takes away: a Decode replay file, every figure as a slide, and presenter mode's QR code of the
view's link."""
from __future__ import annotations

import base64
import io
import re

import pytest
from app_session import APP, assert_no_exception, capture_downloads, open_app, texts
from streamlit.testing.v1 import AppTest

from transformer.charts import MAX_REPLAY_STEPS, SLIDE_HEIGHT, SLIDE_WIDTH

TEXT = "stressed"
URL = "http://studio.example:8501/"


def open_link(page: str, params: dict[str, str], url: str | None = None) -> AppTest:
    """A new session opening pages/<page>.py with these query parameters (and the browser's address, if given)."""
    at = AppTest.from_file(str(APP), default_timeout=90)
    if url is not None:
        at.context = {"url": url + ("" if page == "home" else page)}
    at.switch_page(f"pages/{page}.py")
    at.query_params = dict(params)
    at.run()
    assert_no_exception(at)
    return at


def png_size(data: bytes) -> tuple[int, int]:
    from PIL import Image
    return Image.open(io.BytesIO(data)).size


def assert_slides(downloads: dict, stem: str, *title_words: str) -> None:
    """The slide of `stem` as PNG (1920x1080), SVG (the title naming `title_words`) and PDF."""
    png, svg, pdf = (downloads[f"{stem}_slide.{ext}"]() for ext in ("png", "svg", "pdf"))
    assert png.startswith(b"\x89PNG") and png_size(png) == (SLIDE_WIDTH, SLIDE_HEIGHT)
    assert svg.lstrip().startswith("<svg") and f'width="{SLIDE_WIDTH}" height="{SLIDE_HEIGHT}"' in svg
    for word in title_words:
        assert word in svg, (stem, word)
    assert pdf.startswith(b"%PDF")
