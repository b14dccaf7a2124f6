"""Streamlit's own static files (its JavaScript chunks, CSS and fonts) served from memory, gzip'd for browsers.

A first visit fetches ~130 of Streamlit's JavaScript files (4.3 MB with the fonts) before the page can connect.
Streamlit serves them uncompressed on purpose: Starlette's gzip middleware would compress them again on every
request. So they crossed a real network at full size, and each one cost the server a file-system check and a
worker-thread read. (Each also waited ~40 ms for a delayed ACK; that was TCP, see `ui.serve.nodelay_listeners`.)

`StaticFromMemory` (an ASGI middleware of app.py's `st.App`) answers those requests itself: each file is read and
gzip'd once (the files are content-hashed and immutable), kept, and sent with the caching headers Streamlit sends,
an ETag, and a 304 for a matching If-None-Match. A first view then moves 1.6–1.8 MB instead of 4.3 MB. Anything it
does not recognise as one of Streamlit's static files (a path outside that folder, `..`, a range request, a method
other than GET or HEAD) goes to Streamlit unchanged. A few chunks are served with a fix of Streamlit's frontend
(`ui.server.frontend_fixes`: a fresh page's text box painted empty before its value).
"""
from __future__ import annotations

import gzip
import hashlib
import mimetypes
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

import streamlit

from .frontend_fixes import fixed

STATIC_ROOT = Path(streamlit.__file__).parent / "static"  # what Streamlit serves at "/"
ASSETS = STATIC_ROOT / "static"  # its hashed bundles: js/, css/, media/
_ASSETS_REAL = ASSETS.resolve()
MAX_AGE = 365 * 24 * 60 * 60  # Streamlit's own for its hashed files
_COMPRESSIBLE = {".js", ".css", ".svg", ".json", ".map", ".txt"}
_RELATIVE = re.compile(r"^static/(?:[A-Za-z0-9_@~+-][A-Za-z0-9_.@~+-]*/)*[A-Za-z0-9_@~+-][A-Za-z0-9_.@~+-]*$")
_TYPES = {".js": "application/javascript", ".css": "text/css", ".woff2": "font/woff2", ".svg": "image/svg+xml"}

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Asset:
    """One static file: its bytes, its gzip'd bytes (None when gzip would not help), type and entity tag."""

    body: bytes
    gzipped: bytes | None
    content_type: str
    etag: str


def asset(relative: str) -> Asset | None:
    """The file at `relative` ("static/js/index.abc.js") under Streamlit's static folder, or None when that is not
    a plain file inside its `static/` folder."""
    if not _RELATIVE.match(relative):  # no segment may start with "." (so no ".."), no backslash, no empty segment
        return None
    path = STATIC_ROOT / relative
    try:
        if not path.resolve().is_relative_to(_ASSETS_REAL) or not path.is_file():
            return None
        return _load(str(path))
    except OSError:
        return None


@lru_cache(maxsize=None)  # only files that exist come here: bounded by Streamlit's static folder
def _load(path: str) -> Asset:
    body = fixed(Path(path).name, Path(path).read_bytes())  # a few of Streamlit's frontend bugs (frontend_fixes)
    suffix = Path(path).suffix
    gzipped = None
    if suffix in _COMPRESSIBLE and len(body) > 1024:
        packed = gzip.compress(body, compresslevel=6, mtime=0)
        gzipped = packed if len(packed) < len(body) * 0.9 else None
    content_type = _TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "application/octet-stream"
    return Asset(body, gzipped, content_type, f'"{hashlib.sha1(body).hexdigest()[:20]}"')


def precompress(names: Iterable[str]) -> int:
    """Read and gzip the JavaScript files `names` (as in static/js/) ahead of the first visitor; returns how many."""
    return sum(asset(f"static/js/{name}") is not None for name in names)


def _base_path() -> str:
    """'' or '/base' for Streamlit's server.baseUrlPath."""
    base = str(streamlit.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


def response(found: Asset, headers: dict[bytes, bytes], head: bool) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """(status, headers, body) for a request with `headers` (lower-case names) for `found`."""
    common = [(b"cache-control", f"public, immutable, max-age={MAX_AGE}".encode()), (b"etag", found.etag.encode()),
              (b"vary", b"Accept-Encoding")]
    if found.etag.encode() in headers.get(b"if-none-match", b""):
        return 304, common, b""
    body, extra = found.body, []
    if found.gzipped is not None and b"gzip" in headers.get(b"accept-encoding", b"").lower():
        body, extra = found.gzipped, [(b"content-encoding", b"gzip")]
    out = [(b"content-type", found.content_type.encode()), (b"content-length", str(len(body)).encode()),
           *common, *extra]
    return 200, out, b"" if head else body


class StaticFromMemory:
    """ASGI middleware: Streamlit's static files from memory (see the module docstring)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
            headers = {k.lower(): v for k, v in scope.get("headers", [])}
            path, base = scope.get("path", ""), _base_path()
            if path.startswith(f"{base}/static/") and b"range" not in headers:
                found = asset(path[len(base) + 1:])
        if found is None:
            await self.app(scope, receive, send)
            return
        status, out, body = response(found, headers, scope["method"] == "HEAD")
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": body})
