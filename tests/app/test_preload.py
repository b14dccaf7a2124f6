"""The page Streamlit serves names the chart and widget code every page needs, so the browser fetches it early."""
from __future__ import annotations

import asyncio
import gzip
import re

from ui.server import JS_DIR, PreloadChunks, preload_links

PAGE = b"<html><head><title>Streamlit</title></head><body><div id=root></div></body></html>"


def serve(path: str, body: bytes, content_type: bytes, chunks: int = 1, encoding: bytes = b"") -> tuple[dict, bytes]:
    """GET `path` through the middleware in front of an app that answers `body` (in `chunks` parts, in `encoding`)."""
    async def inner(scope, receive, send):
        extra = [(b"content-encoding", encoding)] if encoding else []
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type), *extra, (b"content-length", str(len(body)).encode())]})
        step = -(-len(body) // chunks)
        for i in range(0, len(body), step):
            await send({"type": "http.response.body", "body": body[i:i + step], "more_body": i + step < len(body)})

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    scope = {"type": "http", "method": "GET", "path": path}
    asyncio.run(PreloadChunks(inner)(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return dict(start["headers"]), b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def test_the_chart_code_is_preloaded_and_exists_in_streamlit():
    links = re.findall(r'href="\./static/js/([^"]+)"', preload_links().decode())
    assert any(name.startswith("embed.") for name in links)  # Vega-Lite: the largest chunk of a first chart
    assert any(name.startswith("ArrowVegaLiteChart.") for name in links)
    assert all((JS_DIR / name).is_file() for name in links)


def test_a_page_address_gets_the_preloads_with_a_matching_length():
    headers, body = serve("/decode", PAGE, b"text/html; charset=utf-8", chunks=3)
    assert body.count(b'rel="modulepreload"') == preload_links("decode").count(b'rel="modulepreload"') > 0
    assert body.index(b"modulepreload") < body.index(b"</head>")
    assert int(headers[b"content-length"]) == len(body)


def test_the_gzipped_page_a_browser_gets_has_the_preloads_too():
    # Streamlit gzips the page for any client that accepts gzip, as every browser does
    headers, body = serve("/decode", gzip.compress(PAGE), b"text/html; charset=utf-8", chunks=2, encoding=b"gzip")
    page = gzip.decompress(body)
    assert page.count(b'rel="modulepreload"') == preload_links("decode").count(b'rel="modulepreload"') > 0
    assert page.endswith(PAGE[PAGE.index(b"</head>"):]) and headers[b"content-encoding"] == b"gzip"
    assert int(headers[b"content-length"]) == len(body)
    assert serve("/decode", b"not gzip", b"text/html", encoding=b"br")[1] == b"not gzip"  # another encoding: as is


def test_each_page_gets_the_code_of_its_own_first_view_and_no_data_grid():
    compare = serve("/compare", PAGE, b"text/html")[1]
    home = serve("/", PAGE, b"text/html")[1]
    assert b"/Slider." in compare and b"/Slider." not in home  # Compare's step slider, not on Home
    assert b"/embed." in compare and b"/embed." in home
    for page in ("/", "/decode", "/attention", "/compare"):  # their tables are plain HTML tables now
        assert b"/DataFrame." not in serve(page, PAGE, b"text/html")[1]


def test_static_files_and_other_content_pass_unchanged():
    assert serve("/static/js/index.js", PAGE, b"text/html")[1] == PAGE
    assert serve("/", b'{"a": 1}', b"application/json")[1] == b'{"a": 1}'
    assert serve("/_stcore/health", b"ok", b"text/plain")[1] == b"ok"
