"""In a real browser at 1280 x 720, on the shared app of the shipped checkpoints: the entry beside the model's card
opens the dictionary training form on the Features page (the model's stream preselected); the features read over the
induction model's streams fill the finder; a row picked there opens that feature's page (the known "current token is
3" feature, its strongest activations all on `3`), and the browser's Back returns to the feature the link named (the
known "previous token is 3" feature, its strongest activations all right after `3`), with no page error, nothing wider
than the window and no traceback in the server's log."""
from __future__ import annotations

import re
from urllib.parse import urlencode

from studio_browser import new_page, page_errors, wait_charts, wait_idle
from tests.helpers import ARTIFACTS

WIDTH, HEIGHT = 1280, 720
MODEL = {"model": "shipped:induction"}
PREVIOUS_IS_3, CURRENT_IS_3 = 385, 212  # the shipped dictionary's key and query features at the known induction cell


def _feature_shown(page) -> int:
    """The feature whose page is drawn (its heading), once the page is idle."""
    wait_idle(page, 60_000)
    heading = page.get_by_role("heading", name=re.compile(r"^Feature #\d+$")).first
    heading.wait_for(timeout=60_000)
    return int(heading.inner_text().removeprefix("Feature #"))


def _top_decile(page) -> list[tuple[str, str]]:
    """(token before, highlighted token) of each example in the feature's top decile, as the page shows them."""
    block = page.locator('[data-testid="stMarkdownContainer"]').filter(has_text="decile 10 of 10").first
    pairs = block.evaluate("""b => Array.from(b.querySelectorAll('strong')).map(s => {
        let node = s;
        while (node.parentElement && node.parentElement.tagName !== 'P') node = node.parentElement;
        const before = node.previousSibling;
        return [before && before.nodeType === 3 ? before.textContent.trim().split(/\\s+/).pop() : '',
                s.textContent.trim()];
    })""")
    assert pairs, block.inner_text()
    return [(str(a), str(b)) for a, b in pairs]


def _fits(page) -> None:
    assert page_errors(page) == []
    assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTH


def test_the_features_page_finder_a_features_page_and_back_at_1280_px(shipped_app, browser):
    app, logged = shipped_app, len(shipped_app.log_text())
    page = new_page(browser)
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    # beside the model's card on another page: the form opens on the Features page, resid:L2 preselected
    page.goto(f"{app.url}/train?{urlencode(MODEL)}")
    page.locator(".st-key-sidebar_dictionary_train button").first.click(timeout=120_000)
    site = page.locator(".st-key-dictionary_train_site input")
    site.wait_for(timeout=60_000)
    assert site.input_value() == "resid:L2" and "/dictionary?" in page.url
    _fits(page)
    # the link names the previous-token feature; its features read over 300 of the task's streams
    link = urlencode({**MODEL, "dict": "induction-resid-L2", "feature": PREVIOUS_IS_3})
    page.goto(f"{app.url}/dictionary?{link}")
    page.locator(".st-key-dictionary_features_run button").click(timeout=60_000)
    wait_charts(page, r"by activation decile", 1, timeout_ms=180_000)
    assert _feature_shown(page) == PREVIOUS_IS_3
    assert {before for before, _ in _top_decile(page)} == {"3"}  # each right after `3`
    _fits(page)
    # the finder: top tokens containing 3, the first row (the commonest: "the current token is 3") picked
    box = page.locator(".st-key-dictionary_features_token input")
    box.fill("3")
    box.press("Enter")
    page.get_by_text(re.compile(r"^[1-9] features shown")).wait_for(timeout=60_000)
    wait_idle(page, 60_000)
    grid = page.locator('[class*="st-key-dictionary_features_finder"]').first.bounding_box()
    page.mouse.click(grid["x"] + 18, grid["y"] + 35 + 17)  # the first row's selection box
    page.wait_for_function(f"() => !document.body.innerText.includes('Feature #{PREVIOUS_IS_3}')",
                           timeout=60_000)
    assert _feature_shown(page) == CURRENT_IS_3 and f"feature={CURRENT_IS_3}" in page.url
    assert {token for _, token in _top_decile(page)} == {"3"}  # each on `3`
    _fits(page)
    page.screenshot(path=str(ARTIFACTS / "e2e_features_picked.png"))
    # Back: the feature the link named
    page.go_back()
    page.wait_for_function(f"() => document.body.innerText.includes('Feature #{PREVIOUS_IS_3}')",
                           timeout=60_000)
    assert _feature_shown(page) == PREVIOUS_IS_3
    _fits(page)
    assert "Traceback" not in app.log_text()[logged:]
