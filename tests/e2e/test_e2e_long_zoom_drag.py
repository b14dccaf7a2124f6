"""End to end in a real browser: a drag on a document's overview zooms to the region dragged.

AppTest cannot drag inside a Vega chart, so this is the one test of the drag itself: headless Chromium decodes a
document (~1,200 tokens) on a tiny Qwen2 with an 8,192-token context, drags over the overview's plot, and the zoom's
pickers and the link's `zoom=` follow the region under the drag.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

from studio_browser import new_page, page_errors
from tests.helpers import ARTIFACTS
from tests.helpers.hf_causal_models import lines

NAME = "qwen2-long"
DOC = "\n".join(lines(30))


def _zoom(url: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    value = parse_qs(urlparse(url).query).get("zoom")
    if not value:
        return None
    rows, keys = (tuple(int(n) for n in part.split("-")) for part in value[-1].split(","))
    return rows, keys  # type: ignore[return-value]


def test_dragging_on_the_overview_zooms_to_the_region(shipped_app, browser):
    app = shipped_app  # its `hf:qwen2-long`: a tiny Qwen2 with an 8,192-token context (tests/e2e/conftest.py)
    page = new_page(browser)
    page.set_default_timeout(180_000)
    page.goto(f"{app.url}/decode?model=hf:{NAME}")
    box = page.locator(".st-key-decode_text textarea")  # the page's own box: a document
    box.fill(DOC)
    box.press("Control+Enter")
    page.locator(".st-key-document_job_run button").click()
    page.get_by_text(re.compile(r"^Layer \d+'s heads over all")).wait_for()  # every head's pass is drawn
    page.wait_for_url(re.compile(r"[?&]zoom="))
    before = _zoom(page.url)
    canvas = page.locator(".st-key-map_overview canvas").first  # the overview (Vega draws on a canvas)
    canvas.scroll_into_view_if_needed()
    area = canvas.bounding_box()
    assert area is not None and area["width"] > 100
    x0, x1 = area["x"] + 0.3 * area["width"], area["x"] + 0.6 * area["width"]
    y0, y1 = area["y"] + 0.35 * area["height"], area["y"] + 0.6 * area["height"]
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=10)
    page.mouse.up()
    page.wait_for_function("before => !location.search.includes(before)",
                           arg=f"zoom={before[0][0]}-{before[0][1]}%2C{before[1][0]}-", timeout=120_000)
    (r0, r_last), (k0, k_last) = _zoom(page.url)
    n = before[0][1] + 1  # the default region ends at the last row
    # the tokens under the drag (the plot fills most of the canvas: its axes and legend take the rest)
    assert 0.15 * n < k0 < 0.4 * n < 0.5 * n < k_last < 0.8 * n, (k0, k_last, n)
    assert 0.2 * n < r0 < 0.5 * n < 0.6 * n < r_last < 0.95 * n, (r0, r_last, n)
    thumbs = ".st-key-{} [data-testid='stSliderThumbValue']"
    page.wait_for_function("([sel, want]) => [...document.querySelectorAll(sel)].map(e => e.innerText"
                           ".replace(/,/g, '')).join(' ') === want",
                           arg=[thumbs.format("map_zoom_keys"), f"{k0} {k_last + 1}"])  # the pickers agree
    page.wait_for_function("([sel, want]) => [...document.querySelectorAll(sel)].map(e => e.innerText"
                           ".replace(/,/g, '')).join(' ') === want",
                           arg=[thumbs.format("map_zoom_rows"), f"{r0} {r_last + 1}"])
    assert page_errors(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    canvas.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e_long_zoom_drag.png"))
    page.locator(".st-key-map_zoom_rows").evaluate("e => e.scrollIntoView({block: 'start'})")  # the tile
    page.screenshot(path=str(ARTIFACTS / "e2e_long_zoom_drag_tile.png"))
