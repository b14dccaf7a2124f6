"""QR codes of share links (segno): an SVG for a page, a PNG for a slide or a download."""
from __future__ import annotations

import io

MAX_QR_URL_CHARS = 2000  # a phone camera reads a denser code poorly; share links are far shorter


def _qr(url: str):
    import segno

    if not url:
        raise ValueError("a QR code needs a link")
    if len(url) > MAX_QR_URL_CHARS:
        raise ValueError(f"the link has {len(url):,} characters; a QR code here holds at most {MAX_QR_URL_CHARS:,}")
    return segno.make(url, error="m", micro=False)


def qr_svg(url: str, scale: int = 8, dark: str = "#000", light: str = "#fff") -> str:
    """An SVG QR code of `url` (error correction M, the quiet zone included), `scale` pixels a module."""
    buffer = io.BytesIO()
    _qr(url).save(buffer, kind="svg", scale=scale, dark=dark, light=light, xmldecl=False, svgns=True)
    return buffer.getvalue().decode("utf-8")


def qr_png(url: str, scale: int = 8) -> bytes:
    """A black-on-white PNG QR code of `url`, `scale` pixels a module, the quiet zone included."""
    buffer = io.BytesIO()
    _qr(url).save(buffer, kind="png", scale=scale, dark="#000", light="#fff")
    return buffer.getvalue()


def qr_matrix(url: str) -> tuple[tuple[int, ...], ...]:
    """The code's modules (1 dark, 0 light), row by row, without the quiet zone."""
    return tuple(tuple(int(bool(v)) for v in row) for row in _qr(url).matrix)
