"""Helpers for AppTest-driven tests of the Streamlit app: open a page, read charts and messages."""
from __future__ import annotations

import html
import io
import json
import re
import time
from typing import Any, Callable, Iterator

import pandas as pd
import pyarrow as pa
from streamlit.testing.v1 import AppTest

from tests.helpers import ROOT
from ui.server import page_named

APP = ROOT / "app.py"


def open_app(page: str | None = None, timeout: float = 90) -> AppTest:
    """Run the app (frame + sidebar) and optionally switch to pages/<page>.py; fails on any exception."""
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    at.run()
    assert_no_exception(at)
    if page is not None:
        at.switch_page(page_named(page).path)
        at.run()
        assert_no_exception(at)
    return at


def assert_no_exception(at: AppTest) -> None:
    """A user never sees a traceback."""
    assert not at.exception, [e.value for e in at.exception]


def texts(elements) -> list[str]:
    """The text values of a list of elements (errors, warnings, markdown ...)."""
    return [str(e.value) for e in elements]


def _chart(element, heading: str = "") -> dict[str, Any]:
    spec = json.loads(element.proto.spec)
    frames = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in element.proto.datasets}
    if element.proto.HasField("data") and element.proto.data.data:  # the data handed beside the spec (a zoom's)
        frames[""] = pa.ipc.open_stream(element.proto.data.data).read_pandas()
    return {"spec": spec, "frames": frames, "title": _title(spec) or heading}


def _in_order(node) -> Iterator[Any]:
    """Every element under `node`, in page order."""
    for child in getattr(node, "children", {}).values():
        if hasattr(child, "children"):
            yield from _in_order(child)
        else:
            yield child


def charts(at: AppTest) -> list[dict[str, Any]]:
    """Every Altair chart on the page: its Vega-Lite spec, its datasets as data frames and its title (its own, else
    the chart heading the page drew right above it)."""
    out, heading = [], ""
    for element in _in_order(at.main):
        if element.type == "markdown" and "studio-chart-heading" in str(element.value):
            heading = html.unescape(re.sub(r"<[^>]+>", "", str(element.value)))
        elif element.type == "vega_lite_chart":
            out.append(_chart(element, heading))
            heading = ""
    return out


def chart_titled(at: AppTest, start: str) -> dict[str, Any]:
    """The chart whose title starts with `start`."""
    found = [c for c in charts(at) if c["title"].startswith(start)]
    assert found, f"no chart titled {start!r}; titles: {[c['title'] for c in charts(at)]}"
    return found[0]


def small_tables(at: AppTest) -> list[dict[str, Any]]:
    """The small HTML tables on the page (ui.widgets.small_table), in order: headings, column tooltips and rows of
    cell text, as a user reads them."""
    def cells(row: str, tag: str) -> list[str]:
        return [html.unescape(c) for c in re.findall(rf"<{tag}(?: [^>]*)?>(.*?)</{tag}>", row)]

    found = []
    for element in at.markdown:
        body = str(element.value)
        if 'class="studio-table"' not in body:
            continue
        head, rows = body.split("</thead>")
        found.append({"columns": cells(head, "th"),
                      "help": [html.unescape(t) for t in re.findall(r'<th[^>]*?title="([^"]*)"', head)],
                      "rows": [cells(row, "td") for row in re.findall(r"<tr>(.*?)</tr>", rows)]})
    return found


def only_frame(chart: dict[str, Any]) -> pd.DataFrame:
    """The single (largest) dataset behind a chart."""
    return max(chart["frames"].values(), key=len)


def _title(spec: dict[str, Any]) -> str:
    title = spec.get("title", "")
    return title.get("text", "") if isinstance(title, dict) else str(title)


def poll(at: AppTest, done: Callable[[AppTest], bool], *, seconds: float = 60.0, every: float = 0.5) -> bool:
    """Rerun the app until `done(at)` holds or `seconds` pass; True when it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        at.run()
        assert_no_exception(at)
        if done(at):
            return True
        time.sleep(every)
    return False


def capture_downloads(monkeypatch) -> dict[str, Callable[[], Any]]:
    """file name -> the callable a download button runs when clicked, for every lazy download drawn from now on
    (what the browser would get; AppTest's runtime is gone once a run ends, so the callables are kept here)."""
    from streamlit.runtime.media_file_manager import MediaFileManager
    found: dict[str, Callable[[], Any]] = {}
    original = MediaFileManager.add_deferred

    def add_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        found[str(file_name)] = data_callable
        return original(self, data_callable, mimetype, coordinates, file_name=file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)
    return found


def capture_spinners(monkeypatch) -> list[str]:
    """The text of every st.spinner the app enters from now on (AppTest keeps no transient elements)."""
    import contextlib

    import streamlit
    seen: list[str] = []
    original = streamlit.spinner

    @contextlib.contextmanager
    def spinner(text: str = "In progress...", **kwargs):
        seen.append(text)
        with original(text, **kwargs):
            yield

    monkeypatch.setattr(streamlit, "spinner", spinner)
    return seen


def qr_text(at: AppTest) -> str | None:
    """What a phone reads from the QR code the page shows (None: no code)."""
    import base64

    import vl_convert
    import zxingcpp
    from PIL import Image

    images = [i for i in at.get("image") if i.proto.imgs and i.proto.imgs[0].caption == "Scan to open this view"]
    if not images:
        return None
    assert len(images) == 1
    svg = base64.b64decode(images[0].proto.imgs[0].url.split(",", 1)[1]).decode()
    found = zxingcpp.read_barcodes(Image.open(io.BytesIO(vl_convert.svg_to_png(svg, scale=2.0))))
    assert len(found) == 1 and found[0].format == zxingcpp.BarcodeFormat.QRCode
    return found[0].text


def open_link(page: str, params: dict[str, str], url: str | None = None) -> AppTest:
    """A new session opening pages/<page>.py with these query parameters, as a shared link does (and the browser's
    address, if given)."""
    at = AppTest.from_file(str(APP), default_timeout=90)
    if url is not None:
        at.context = {"url": url + ("" if page == "home" else page)}
    at.switch_page(f"pages/{page}.py")
    at.query_params = dict(params)
    at.run()
    assert_no_exception(at)
    return at


def text_box(at: AppTest, key: str):
    """A page's text box under `key`: one line for most models, multi-line (a text area) for a model that reads
    documents (decoder-only, its own context past the store's threshold)."""
    areas = [box for box in at.text_area if box.key == key]
    return areas[0] if areas else at.text_input(key=key)
