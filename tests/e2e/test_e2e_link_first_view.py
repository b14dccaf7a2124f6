"""In a real browser: a shared link's first painted view is the restored one. A fresh session opening a Home or a
Decode link never shows its text box empty (Streamlit's box used to mount empty and take its value one effect later)
nor the Decode step slider at another step: every state of the box the page ever held, from the box's first
appearance, is the link's text."""
from __future__ import annotations

from urllib.parse import urlencode

from studio_browser import PAGE_SETUP_JS, page_errors, wait_decode_step, wait_idle

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


def _first_view(browser, url: str):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_init_script(PAGE_SETUP_JS)
    context.add_init_script(RECORD_JS)
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(url)
    return page


def test_a_links_text_and_step_are_in_its_first_painted_view(tiny_app, shared_browser):
    decode = _first_view(shared_browser, f"{tiny_app.url}/decode?{urlencode({'text': TEXT, 'step': 3})}")
    wait_decode_step(decode, 3, timeout_ms=60_000)
    seen = decode.evaluate("() => window.__boxes")
    assert seen and all(value == TEXT for value, _ in seen), seen
    assert {thumb for _, thumb in seen if thumb is not None} == {"3"}, seen
    assert page_errors(decode) == []
    decode.context.close()

    home = _first_view(shared_browser, f"{tiny_app.url}/?{urlencode({'text': TEXT[::-1]})}")
    home.locator('[class*="st-key-home_text"]').first.wait_for()
    wait_idle(home)
    seen = home.evaluate("() => window.__boxes")
    assert seen and all(value == TEXT[::-1] for value, _ in seen), seen
    assert page_errors(home) == []
    home.context.close()
