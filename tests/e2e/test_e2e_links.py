"""In a real browser: the address bar follows the view, and that link opened in a fresh context shows the same view,
its first painted view already the restored one (the text box never drawn empty, the step slider at the link's step:
Streamlit's box used to mount empty and take its value one effect later)."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from studio_browser import (
    charts_condition,
    choose,
    new_page,
    page_errors,
    runs_finished,
    wait_charts,
    wait_decode_step,
    wait_for,
    wait_idle,
    wait_rerun,
)

TINY = "shipped:tiny"  # the tiny checkpoint (2 layers, 2 heads) beside the shipped ones in `shipped_app`
TEXT = "abcdefg"
# every DOM change (before the browser paints it): the text box's value and the step slider's, once the box exists
RECORD_JS = """
window.__boxes = [];
new MutationObserver(() => {
  const box = document.querySelector('[class*="st-key-home_text"] :is(input, textarea), '
                                     + '[class*="st-key-decode_text"] :is(input, textarea)');
  if (!box) return;
  const thumb = document.querySelector('.st-key-decode_step [data-testid="stSliderThumbValue"]');
  const seen = [box.value, thumb ? thumb.textContent : null];
  const last = window.__boxes[window.__boxes.length - 1];
  if (!last || last[0] !== seen[0] || last[1] !== seen[1]) window.__boxes.push(seen);
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""


def _shared_view(page, url: str) -> str:
    """Set a Decode view by hand (text, step 3, layer 1, head 2) and return the URL the address bar then shows."""
    page.goto(f"{url}/decode?model={TINY}")
    wait_decode_step(page, 1, timeout_ms=60_000)
    box = page.locator(".st-key-decode_text input")
    before = runs_finished(page)
    box.fill(TEXT)
    box.press("Enter")
    wait_rerun(page, before)
    for t in (2, 3):
        page.locator(".st-key-decode_next button").click()
        wait_decode_step(page, t)
    choose(page, "decode_layer", "Layer 1")
    wait_charts(page, r"step 3 · layer 1\b", 1)
    choose(page, "decode_head", "Head 2")
    wait_charts(page, r"step 3 · layer 1 · head 2\b", 1)
    page.wait_for_function("() => new URLSearchParams(location.search).get('head') === '2'")
    assert page_errors(page) == []
    return page.url


def test_a_link_opened_in_a_fresh_browser_context_shows_the_same_step_layer_and_head(shipped_app, browser):
    server = shipped_app
    link = _shared_view(new_page(browser), server.url)
    params = parse_qs(urlsplit(link).query)
    assert urlsplit(link).path == "/decode"
    assert (params["text"], params["step"], params["layer"], params["head"]) == ([TEXT], ["3"], ["1"], ["2"])
    fresh = new_page(browser)  # a new context: its own cookies, its own Streamlit session
    fresh.context.add_init_script(RECORD_JS)
    fresh.goto(link)
    view = wait_for(fresh, charts_condition(r"step 3 · layer 1 · head 2\b", 2, heading="Step 3 of"), 60_000)
    assert view.step[0] == 3
    seen = fresh.evaluate("() => window.__boxes")  # from its first appearance: the link's text and step
    assert seen and all(value == TEXT for value, _ in seen), seen
    assert {thumb for _, thumb in seen if thumb is not None} == {"3"}, seen
    chart_code = fresh.evaluate("() => performance.getEntriesByType('resource').filter((r) => "
                                "/\\/static\\/js\\/embed\\./.test(r.name)).map((r) => [r.encodedBodySize, "
                                "r.decodedBodySize])")
    assert chart_code and all(sent < size / 2 for sent, size in chart_code)  # gzip'd (ui.static_cache)
    assert fresh.locator(".st-key-decode_text input").input_value() == TEXT
    assert fresh.locator('.st-key-decode_step [data-testid="stSliderThumbValue"]').inner_text() == "3"
    fresh.locator(".st-key-studio_share button").first.click()  # "Copy link": opened, it shows this view
    fresh.get_by_text(link.split("?", 1)[1]).first.wait_for(timeout=30_000)
    fresh.keyboard.press("Escape")
    assert page_errors(fresh) == []
    fresh.goto(f"{server.url}/?model={TINY}&text={TEXT[::-1]}")  # a Home link: its box painted with its text
    fresh.locator('[class*="st-key-home_text"]').first.wait_for()
    wait_idle(fresh)
    seen = fresh.evaluate("() => window.__boxes")
    assert seen and all(value == TEXT[::-1] for value, _ in seen), seen
    fresh.goto(f"{server.url}/attention?model={TINY}&head=99&layer=abc")  # a stale link: defaults and a note
    wait_charts(fresh, r"Cross-attention · layer \d+", 1, timeout_ms=60_000)
    assert "Parts of this link were ignored" in fresh.locator("body").inner_text()
    assert page_errors(fresh) == []
    fresh.locator('[data-testid="stVegaLiteChart"]').first.hover()  # its toolbar: one PNG download only
    fresh.locator('[data-testid="stElementToolbar"] button[aria-label="Fullscreen"]').first.wait_for()
    assert not fresh.locator('[data-testid="stElementToolbar"] button[aria-label="Download as PNG"]').first \
        .is_visible()
    fresh.goto(f"{server.url}/attention?model={TINY}&text={TEXT}&layer=2&head=mean&present=1")  # presenter mode's keys
    wait_charts(fresh, r"Cross-attention · layer 2 · mean of \d+ heads", 1, timeout_ms=60_000)
    assert not fresh.locator('section[data-testid="stSidebar"]').is_visible()
    fresh.keyboard.press("h")
    wait_charts(fresh, r"Cross-attention · layer 2 · head 1\b", 1)
    fresh.keyboard.press("Shift+H")
    wait_charts(fresh, r"Cross-attention · layer 2 · mean of \d+ heads", 1)
    assert "present=1" in fresh.url and page_errors(fresh) == []
