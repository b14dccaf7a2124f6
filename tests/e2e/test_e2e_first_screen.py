"""In a real browser at 1280x720 (a laptop's or a projector's first screen), the element a page exists for is on the
first screen: Decode after a sentence is typed (Next and the step's map), Attention (the map's top), each of Home's
example links (what it promises), Home's Try it map with its legend whole. One server and one browser for the module
(tests/e2e/conftest.py)."""
from __future__ import annotations

from urllib.parse import urlencode

import pytest

from studio_browser import (
    PAGE_SETUP_JS,
    charts_condition,
    decode_step_condition,
    page_errors,
    runs_finished,
    wait_for,
    wait_idle,
    wait_rerun,
)
from tests.e2e.layout_check import LAYOUT_CHECK_JS

SCREEN = {"width": 1280, "height": 720}
SENTENCE = "A man plays the guitar on a stage."
# the boxes a newcomer looks for: Prev and Next, the step's heading, the step's map (the chart under the heading that
# names the rows up to the step) and the Attention page's large map (the chart under the heading of its kind)
BOXES_JS = r"""() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const box = (e) => { if (!e) return null; const r = e.getBoundingClientRect();
                       return {top: Math.round(r.top), bottom: Math.round(r.bottom), left: Math.round(r.left),
                               right: Math.round(r.right)}; };
  const button = (name) => main.querySelector(`.st-key-decode_${name.toLowerCase()} button`);
  const after = (pattern) => {  // the chart drawn right under a chart heading matching `pattern`
    for (const h of main.querySelectorAll('.studio-chart-heading')) {
      if (!new RegExp(pattern).test(h.textContent)) continue;
      const next = h.closest('[data-testid="stElementContainer"]').nextElementSibling;
      const drawn = next && next.querySelector('[data-testid="stVegaLiteChart"] :is(svg, canvas)');
      if (drawn) return drawn;
    }
    return null;
  };
  const heading = [...main.querySelectorAll('[data-testid="stHeading"]')]
    .find((h) => /^Step \d+ of/.test(h.textContent));
  return {next: box(button('Next')), prev: box(button('Prev')), heading: box(heading),
          step: heading ? heading.textContent : null,
          decodeMap: box(after('rows up to step')),
          attentionMap: box([...main.querySelectorAll('[data-testid="stVegaLiteChart"] svg')].find(
            (svg) => /attention · layer/.test([...svg.querySelectorAll('text')].map((t) => t.textContent).join(' ')))),
          scrollY: Math.round(window.scrollY)};
}"""


def _open(browser, url: str):
    """A fresh context (its own session) at 1280x720 on `url`, idle."""
    context = browser.new_context(viewport=SCREEN)
    context.add_init_script(PAGE_SETUP_JS)
    page = context.new_page()
    page.set_default_timeout(90_000)
    page.goto(url)
    page.locator('[data-testid="stMain"] h1').first.wait_for()
    wait_idle(page, 120_000)
    return page


def _legends_whole(page, where: str) -> None:
    found = page.evaluate(LAYOUT_CHECK_JS)
    cut = {what: found[what] for what in ("legendOut", "textCut", "wider", "truncated") if found[what]}
    assert cut == {}, f"{where}: cut: {cut}"


def _decode_first_screen(page, where: str) -> dict:
    boxes = page.evaluate(BOXES_JS)
    assert boxes["scrollY"] == 0, where
    assert boxes["next"] is not None and boxes["prev"] is not None, f"{where}: no Prev / Next: {boxes}"
    assert boxes["next"]["bottom"] <= 720, f"{where}: Next below the first screen: {boxes}"
    assert boxes["heading"] is not None and boxes["heading"]["bottom"] <= 720, f"{where}: the step: {boxes}"
    assert boxes["decodeMap"] is not None and boxes["decodeMap"]["bottom"] <= 720, f"{where}: the map: {boxes}"
    return boxes


def test_decode_after_a_sentence_shows_next_and_the_steps_map_on_the_first_screen(shipped_app, browser):
    page = _open(browser, f"{shipped_app.url}/decode")
    box = page.locator(".st-key-decode_text input")
    before = runs_finished(page)
    box.fill(SENTENCE)
    box.press("Enter")  # the page shows the typed sentence's decoding (not the example it opened on)
    wait_for(page, charts_condition(r"^Cross-attention rows up to step 1\b", texts=("▁guitar", "▁stage"),
                                    after_runs=before), 120_000)
    first = _decode_first_screen(page, "Decode after typing")
    assert first["step"].startswith("Step 1 of")
    page.locator(".st-key-decode_next button").click()  # a click on Next answers on the same screen
    wait_for(page, decode_step_condition(2, texts=("▁guitar",)), 60_000)
    assert _decode_first_screen(page, "Decode after Next")["step"].startswith("Step 2 of")
    _legends_whole(page, "Decode")
    assert page_errors(page) == []
    page.context.close()


def test_attention_shows_its_map_near_the_top_of_the_first_screen(shipped_app, browser):
    page = _open(browser, f"{shipped_app.url}/attention?{urlencode({'text': SENTENCE})}")
    boxes = page.evaluate(BOXES_JS)
    assert boxes["attentionMap"] is not None and boxes["attentionMap"]["top"] <= 620, boxes
    _legends_whole(page, "Attention")
    assert page_errors(page) == []
    page.context.close()


@pytest.mark.parametrize("label", ["The anti-diagonal of reversal", "The sorting head", "A word-alignment head",
                                   "Translation step by step"])
def test_each_home_example_lands_on_what_it_promises(shipped_app, browser, label):
    page = _open(browser, shipped_app.url)
    before = runs_finished(page)
    page.locator('[data-testid="stMain"] a', has_text=label).click()
    wait_rerun(page, before, 120_000)
    wait_idle(page, 120_000)
    boxes = page.evaluate(BOXES_JS)
    if "/decode" in page.url:
        _decode_first_screen(page, label)
    else:  # the map it promises whole on the screen (brought into view under the page's pickers)
        try:
            page.wait_for_function(f"() => {{ const b = ({BOXES_JS})().attentionMap; return b && b.top >= 0 && "
                                   "b.bottom <= 720; }", timeout=10_000)
        finally:
            boxes = page.evaluate(BOXES_JS)
        assert boxes["attentionMap"] is not None, f"{label}: no map: {boxes}"
        assert 0 <= boxes["attentionMap"]["top"] <= 620 and boxes["attentionMap"]["bottom"] <= 720, f"{label}: {boxes}"
        assert "focus" not in page.url  # brought into view once: the page's link no longer asks for it
    _legends_whole(page, label)
    assert page_errors(page) == []
    page.context.close()


def test_homes_try_it_map_keeps_its_legend_for_a_long_output(shipped_app, browser):
    text = "Two young children in blue shirts are playing soccer on a green field near a large old stone house."
    page = _open(browser, f"{shipped_app.url}/?{urlencode({'text': text})}")
    _legends_whole(page, "Home's Try it")
    assert page_errors(page) == []
    page.context.close()


def test_a_page_key_in_presenter_mode_keeps_the_model_picked_in_the_sidebar(shipped_app, browser):
    """Decode visited on one model, the sidebar's pick changed on Home, presenter mode on, PageDown: Decode shows
    the model picked, not the one of its last link."""
    page = _open(browser, f"{shipped_app.url}/decode")
    before = runs_finished(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Home", exact=True).click()
    wait_rerun(page, before, 120_000)
    before = runs_finished(page)
    page.locator(".st-key-sidebar_model [role='combobox']").click()
    page.get_by_role("option").filter(has_text="reverse").first.click()
    wait_rerun(page, before, 120_000)
    before = runs_finished(page)
    page.locator(".st-key-studio_present_enter button").first.click()
    wait_rerun(page, before, 120_000)
    assert "reverse" in page.locator(".st-key-studio_present_bar").inner_text()
    page.keyboard.press("PageDown")
    page.wait_for_url("**/decode?*")
    page.locator('[data-testid="stMain"] h1').first.wait_for()
    wait_idle(page, 120_000)
    assert "model=shipped%3Areverse" in page.url and "present=1" in page.url, page.url
    assert "reverse" in page.locator(".st-key-studio_present_bar").inner_text()
    assert page_errors(page) == []
    page.context.close()


def test_a_reloaded_page_asks_nothing_outside_and_gets_no_404(shipped_app, browser):
    """Offline noise: a page opened at its own address (and reloaded) asks no font server for its icon, and finds the
    server's health check and host config at the first address it tries."""
    context = browser.new_context(viewport=SCREEN)
    context.add_init_script(PAGE_SETUP_JS)
    page = context.new_page()
    outside, missing = [], []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(shipped_app.url)
            and r.url.startswith("http") else None)
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    for _ in range(2):  # opened, then reloaded
        page.goto(f"{shipped_app.url}/attention")
        page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=120_000)
        wait_idle(page, 120_000)
    assert outside == [], f"asked outside: {outside}"
    assert missing == [], f"404s: {missing}"
    context.close()


def test_shipped_models_open_on_inputs_they_read(shipped_app, browser):
    """The recall model opens on one of its streams (not the letters' fallback "attentionisall"), and Compare's model
    B reads model A's sentence (no other shipped model reads Multi30k's, so B is A, and the page says so)."""
    page = _open(browser, f"{shipped_app.url}/decode?{urlencode({'model': 'shipped:recall'})}")
    text = page.locator(".st-key-decode_text :is(input, textarea)").first.input_value()
    assert text != "attentionisall" and len(text) >= 72, text  # a recall stream: 72 symbols or more
    assert "vocabulary" not in page.locator('[data-testid="stMain"]').inner_text()
    page.context.close()
    page = _open(browser, f"{shipped_app.url}/compare")
    assert "compare=shipped%3Amulti30k-en-de" in page.url, page.url  # B, as the page's link names it
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "B is A itself" in main and "Not in the model's vocabulary" not in main
    assert page_errors(page) == []
    page.context.close()


def test_a_click_on_a_map_cell_answers_on_the_screen(shipped_app, browser):
    """A click on a cell of Attention's map opens "What made this score" and brings it onto the screen (it sits
    below the map), numbered from 1 as the map's pickers are."""
    query = {"text": SENTENCE, "kind": "cross", "layer": "1", "head": "1"}
    page = _open(browser, f"{shipped_app.url}/attention?{urlencode(query)}")
    boxes = page.evaluate(BOXES_JS)
    assert boxes["attentionMap"] is not None, boxes
    area = page.locator('.st-key-attention_heatmap [data-testid="stVegaLiteChart"]').first.bounding_box()
    assert area is not None
    before = runs_finished(page)
    page.mouse.click(area["x"] + area["width"] * 0.45, area["y"] + area["height"] * 0.4)
    wait_rerun(page, before, 120_000)
    wait_idle(page, 120_000)
    answer = page.locator(".st-key-attention_qk_open").get_by_text("the score the model computed").first
    answer.wait_for(timeout=60_000)
    top = answer.bounding_box()
    assert top is not None and 0 <= top["y"] and top["y"] + top["height"] <= SCREEN["height"], top
    assert page_errors(page) == []
    page.context.close()



LONG = ("Two young children in blue shirts are playing soccer on a green field near a large old stone house while "
        "their parents watch from wooden benches under the tall trees.")


@pytest.mark.parametrize("text", [SENTENCE, LONG])
def test_presenter_decode_keeps_the_map_next_and_the_output_card_on_the_first_screen(shipped_app, browser,
                                                                                    text):
    """Presenter mode at 1280x720: beside the step's map, Prev and Next and the output card (its first tokens, for a
    long output) end above 720 px, also for a 35-token source whose map was drawn across the page with the side
    column under it."""
    page = _open(browser, f"{shipped_app.url}/decode?{urlencode({'text': text, 'present': '1'})}")
    _decode_first_screen(page, "presenting")
    card = page.locator(".st-key-decode_output_greedy")
    first_token = card.locator('span[title^="position 1"]').first.bounding_box()
    assert first_token is not None and first_token["y"] + first_token["height"] <= SCREEN["height"], first_token
    if text == SENTENCE:  # a short output's card is whole on the first screen
        box = card.bounding_box()
        assert box is not None and box["y"] + box["height"] <= SCREEN["height"], box
    assert page_errors(page) == []
    page.context.close()

