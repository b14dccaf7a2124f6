"""A colour legend keeps its gradient after clicks that rewrite the page's address: Vega's SVG renderer points each
gradient at `url(<the page's URL then>#id)`, which no longer resolves once the app writes the view into the URL."""
from __future__ import annotations

import io

import pytest
from PIL import Image

from studio_browser import page_errors, runs_finished, wait_decode_step, wait_rerun

TINY = "shipped:tiny"  # the tiny checkpoint (2 layers, 2 heads) beside the shipped ones in `shipped_app`
TEXT = "abcdefg"
LEGENDS = '[data-testid="stVegaLiteChart"] .role-legend-gradient path'


def _painted_gradient(page, legend) -> bool:
    """True when the legend's gradient is painted: its two ends differ in colour and one is dark (unpainted, the
    legend is the page's white throughout)."""
    image = Image.open(io.BytesIO(legend.screenshot())).convert("RGB")
    width, height = image.size
    ends = [image.getpixel((x, height // 2)) for x in (2, width - 3)] if width > height else \
        [image.getpixel((width // 2, y)) for y in (2, height - 3)]
    return ends[0] != ends[1] and min(sum(end) for end in ends) < 3 * 200


@pytest.fixture
def server(shipped_app):
    """The worker's shared app (`page` opens on it): this test only reads."""
    return shipped_app


def test_the_legend_gradient_is_painted_after_ten_clicks_that_rewrite_the_url(page, server):
    page.goto(f"{server.url}/decode?model={TINY}")
    wait_decode_step(page, 1, timeout_ms=60_000)
    box = page.locator(".st-key-decode_text input")
    before = runs_finished(page)
    box.fill(TEXT)
    box.press("Enter")
    wait_rerun(page, before)
    urls = {page.url}
    step = 1
    for click in range(10):  # Next, Next, Previous, Next, …: each writes the step into the address bar; ends at 3
        button = "decode_next" if click < 2 or click % 2 == 1 else "decode_prev"
        step += 1 if button == "decode_next" else -1
        page.locator(f".st-key-{button} button").click()
        wait_decode_step(page, step)
        page.wait_for_function("(step) => new URLSearchParams(location.search).get('step') === String(step)", arg=step)
        urls.add(page.url)
    assert step == 3
    assert len(urls) > 1  # the address was rewritten
    # the browser lays each chart out again (as when Streamlit moves an element): paint servers are looked up anew
    page.evaluate("""() => document.querySelectorAll('[data-testid="stVegaLiteChart"] svg').forEach((svg) => {
        svg.style.display = "none"; svg.getBoundingClientRect(); svg.style.display = ""; })""")
    legends = page.locator(LEGENDS)
    assert legends.count() > 0
    for i in range(legends.count()):
        legend = legends.nth(i)
        legend.scroll_into_view_if_needed()
        assert _painted_gradient(page, legend), f"legend {i} lost its gradient: fill {legend.get_attribute('fill')}"
    shim = page.locator('[data-testid="stElementContainer"]:has(.studio-svg-urls)')
    assert shim.count() == 1 and not shim.is_visible()  # the script that keeps them painted takes no room
    assert page_errors(page) == []
