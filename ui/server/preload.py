"""Chunks every page needs, fetched while the page starts instead of when its first chart arrives.

Streamlit's frontend loads an element's code only when the element first shows up: the Vega-Lite chart code (~760 KB,
`embed.*.js`), Arrow's decoder, the HTML and widget code were fetched and compiled after the script's first
messages, on the critical path to the first chart. `PreloadChunks` (an ASGI middleware of app.py's `st.App`) adds
`<link rel="modulepreload">` for them to the page Streamlit serves, so the browser fetches and compiles them while it
waits for the server. The file names are looked up once in Streamlit's own static folder: a chunk a later Streamlit
does not have (or names twice) is simply not preloaded. Streamlit gzips the page for a browser (any client that sends
`Accept-Encoding: gzip`), so a gzip'd page is unpacked, given its tags and packed again; a page in another encoding
passes unchanged. The same page is told the server's base address (`backend_base`), so a page opened at its own
address does not first look for the server under it (two 404s in every reload's log).
"""
from __future__ import annotations

import gzip
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Awaitable, Callable

import streamlit
from streamlit import config

# the stems (file name before the hash) of what Home, Decode, Attention and Compare all load for their first view
STEMS = ("embed", "ArrowVegaLiteChart", "vega-interpreter", "serialization", "recordbatch", "Quiver",
         "withFullScreenWrapper", "CustomTheme", "rehype-raw", "hastscript", "web-namespaces", "Html", "purify.es",
         "Selectbox", "useSyncComboBoxEnterTargetFocus", "useMenuTrigger", "TextInput", "TextField", "Button",
         "DownloadButton", "WidgetLabel", "WidgetLabelHelpIcon", "PageLink")
# and what only some pages load for theirs (radios, sliders, toggles, the ablation picker; no page shows a data grid
# in its first view)
PAGE_STEMS = {
    "decode": ("Radio", "Slider", "moment", "numbro", "NumberInput", "Checkbox", "Multiselect"),
    "attention": ("Radio", "Checkbox", "Multiselect"),
    "compare": ("Radio", "Slider", "moment", "numbro"),
}
JS_DIR = Path(streamlit.__file__).parent / "static" / "static" / "js"
_SKIP = ("/_stcore", "/static/", "/media/", "/component/", "/app/static/", "/favicon")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@lru_cache(maxsize=16)
def preload_links(page: str = "") -> bytes:
    """The <link rel="modulepreload"> tags of STEMS and the page's PAGE_STEMS, each found once in Streamlit's static
    folder (`page`: the first part of the address, "" for Home)."""
    files = sorted(p.name for p in JS_DIR.glob("*.js")) if JS_DIR.is_dir() else []
    tags = []
    for stem in STEMS + PAGE_STEMS.get(page, ()):
        found = [name for name in files if name.startswith(stem + ".") and name.count(".") == stem.count(".") + 2]
        if len(found) == 1:
            tags.append(f'<link rel="modulepreload" crossorigin href="./static/js/{found[0]}">')
    return "".join(tags).encode()


def first_view_chunks() -> list[str]:
    """Every JavaScript file a first visit fetches at start: those Streamlit's page names, and the preloads of every
    page (file names in Streamlit's static/js folder)."""
    page = (JS_DIR.parent.parent / "index.html").read_text(errors="replace") if JS_DIR.is_dir() else ""
    links = b"".join(preload_links(name) for name in ("", *PAGE_STEMS)).decode()
    return list(dict.fromkeys(re.findall(r'\./static/js/([^"/]+\.js)"', page + links)))


def backend_base() -> bytes:
    """A script naming the server's base address for Streamlit's frontend (`window.__streamlit.BACKEND_BASE_URL`):
    without it, a page opened at its own address (/decode) first asks /decode/_stcore/health and
    /decode/_stcore/host-config, two 404s in the log of every reload, before it tries the root."""
    base = "/" + "/".join(p for p in str(config.get_option("server.baseUrlPath") or "").split("/") if p)
    base = base.rstrip("/") + "/"
    return (f"<script>window.__streamlit = Object.assign(window.__streamlit || {{}}, "
            f"{{BACKEND_BASE_URL: window.location.origin + {base!r}}});</script>").encode()


def with_preloads(page: bytes, path: str = "/") -> bytes:
    """The page served at `path` with the server's base address (`backend_base`) and its preload tags just before
    </head> (unchanged when it has no </head>)."""
    links = preload_links(path.strip("/").split("/")[0])
    at = page.find(b"</head>")
    return page if at < 0 else page[:at] + backend_base() + links + page[at:]


def with_preloads_encoded(page: bytes, path: str, encoding: bytes) -> bytes:
    """with_preloads for a page sent in `encoding` (b"" for none, or b"gzip")."""
    if encoding == b"gzip":
        return gzip.compress(with_preloads(gzip.decompress(page), path), compresslevel=6)
    return with_preloads(page, path)


class PreloadChunks:
    """ASGI middleware: adds preload_links() to the HTML page Streamlit serves for a page's address."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or scope.get("method") != "GET" or path.startswith(_SKIP):
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] | None = None
        encoding = b""
        body: list[bytes] = []

        async def send_page(message: dict[str, Any]) -> None:
            nonlocal start, encoding
            if message["type"] == "http.response.start":
                headers = {k.lower(): v for k, v in message.get("headers", [])}
                encoding = headers.get(b"content-encoding", b"").strip().lower()
                if b"text/html" in headers.get(b"content-type", b"") and encoding in (b"", b"gzip"):
                    start = message  # held back until the body is complete
                    return
            elif message["type"] == "http.response.body" and start is not None:
                body.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                page = with_preloads_encoded(b"".join(body), path, encoding)
                kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                await send({**start, "headers": [*kept, (b"content-length", str(len(page)).encode())]})
                await send({"type": "http.response.body", "body": page})
                return
            await send(message)

        await self.app(scope, receive, send_page)
