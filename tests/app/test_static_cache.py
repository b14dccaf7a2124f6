"""Streamlit's static files come from memory, gzip'd for a browser, with the caching headers Streamlit sends; a
request that is not for one of them reaches Streamlit unchanged; the server's connections send small writes at once."""
from __future__ import annotations

import asyncio
import gzip
import socket

import pytest

from ui.server import JS_DIR, MAX_AGE, StaticFromMemory, first_view_chunks, pending_fixes
from ui.shell import nodelay_listeners

pytestmark = pytest.mark.slow

PASSED = b"streamlit answered"


def get(path: str, *, method: str = "GET", headers: dict[bytes, bytes] | None = None) -> tuple[int, dict, bytes]:
    """(status, headers, body) of `path` through the middleware, in front of an app that always answers PASSED."""
    async def inner(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": PASSED})

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    scope = {"type": "http", "method": method, "path": path, "headers": list((headers or {}).items())}
    asyncio.run(StaticFromMemory(inner)(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in sent if m["type"] ==
                                                                "http.response.body")


def test_a_first_visits_javascript_comes_gzipped_and_unpacks_to_streamlits_file():
    name = next(n for n in first_view_chunks() if n.startswith("embed."))  # Vega-Lite, the largest chunk
    status, headers, body = get(f"/static/js/{name}", headers={b"accept-encoding": b"gzip, deflate, br"})
    original = (JS_DIR / name).read_bytes()
    assert status == 200 and headers[b"content-encoding"] == b"gzip"
    assert gzip.decompress(body) == original and len(body) < len(original) / 2
    assert int(headers[b"content-length"]) == len(body)
    assert headers[b"content-type"] == b"application/javascript"
    assert headers[b"cache-control"] == f"public, immutable, max-age={MAX_AGE}".encode()
    plain = get(f"/static/js/{name}")  # a client that does not accept gzip gets the file as it is
    assert plain[2] == original and b"content-encoding" not in plain[1]
    again = get(f"/static/js/{name}", headers={b"if-none-match": headers[b"etag"]})
    assert again[0] == 304 and again[2] == b""
    head = get(f"/static/js/{name}", method="HEAD")
    assert head[0] == 200 and head[2] == b"" and int(head[1][b"content-length"]) == len(original)


def test_anything_else_reaches_streamlit_unchanged():
    name = first_view_chunks()[0]
    for path in ("/", "/decode", "/_stcore/health", "/static/js/no-such-file.js", "/static/../index.html",
                 "/static/js/../../index.html", "/static//etc/passwd", "/static/js/%2e%2e/index.html",
                 "/media/abc.png", "/static/"):
        assert get(path)[2] == PASSED, path
    assert get(f"/static/js/{name}", headers={b"range": b"bytes=0-10"})[2] == PASSED  # ranges: Streamlit's own
    assert get(f"/static/js/{name}", method="POST")[2] == PASSED
def test_the_servers_connections_send_small_writes_at_once():
    # Streamlit binds its socket with protocol number 0, so asyncio leaves Nagle's algorithm on and every second
    # response on a kept-alive connection waited ~40 ms for the browser's delayed ACK
    listener = socket.socket(socket.AF_INET)  # as Streamlit binds it
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        assert nodelay_listeners() >= 1
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        with client, accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        listener.close()


def test_the_text_boxes_are_served_with_their_first_paint_fix():
    """The text input's and text area's chunks go out with the fix that paints a fresh page's box with its value (the
    browser test of a link's first view relies on it); every other chunk as Streamlit ships it."""
    assert pending_fixes(JS_DIR) == []
    for stem in ("TextInput", "TextArea"):
        name = next(p.name for p in JS_DIR.glob(f"{stem}.*.js") if p.name.count(".") == 2)
        served = get(f"/static/js/{name}")[2]
        assert served != (JS_DIR / name).read_bytes()
        assert b"??(t.setValue?t.value:t.default)??null" in served
