"""In a real browser: the Learn tour walks from the first stage to the last, one → key press a stage, every stage
drawing its charts without a page error and nothing wider than the window — on the shipped Multi30k model in presenter
mode at a projector's 1280 x 720, and on a reversal model trained a moment before on the Train page."""
from __future__ import annotations

import re
from urllib.parse import urlencode

from studio_browser import (
    choose,
    new_page,
    page_errors,
    wait_charts,
    wait_idle,
)
from ui.views import TOUR

CAPTION = "A man in a blue shirt is riding a bike."
TRAIN_FORM = {"train_max_steps": 40, "train_max_seconds": 120, "train_batch_size": 16, "train_n_train": 300,
              "train_eval_every": 20, "train_eval_examples": 10, "train_probe_every": 10, "train_warmup_steps": 0}


# the labels Learn's "several heads" row shows (Vega hides a label it finds overlapping with opacity 0)
HEADS_ROW_LABELS_JS = """() => {
  const shown = (svg) => [...svg.querySelectorAll('text')]
    .filter((t) => t.getAttribute('opacity') !== '0' && getComputedStyle(t).opacity !== '0')
    .map((t) => t.textContent.trim());
  const svg = [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg')]
    .find((s) => [...s.querySelectorAll('text')].some((t) => t.textContent.trim() === 'H1'));
  return svg ? shown(svg) : [];
}"""


def _walk_the_tour(page) -> str:
    """From the first stage to the last with one → press each; every stage's heading and charts drawn, no page error.
    What the page said along the way."""
    wait_charts(page, r"Query vector", 1, timeout_ms=120_000)
    said = []
    for stage in TOUR[1:]:
        page.keyboard.press("ArrowRight")
        page.get_by_role("heading", name=stage.title).wait_for(timeout=90_000)
        wait_idle(page, 90_000)
        assert page_errors(page) == [], stage.title
        assert page.evaluate("() => document.documentElement.scrollWidth") <= page.viewport_size["width"], stage.title
        if stage.name == "heads":  # every key and head of its row named (9 of 12 keys were hidden as overlapping)
            labels = page.evaluate(HEADS_ROW_LABELS_JS)
            keys = [int(t.split(":")[0]) for t in labels if re.match(r"^\d+: ", t)]
            heads = [int(t[1:]) for t in labels if re.fullmatch(r"H\d+", t)]
            assert len(keys) > 3 and sorted(keys) == list(range(1, len(keys) + 1)), labels
            assert heads and sorted(heads) == list(range(1, len(heads) + 1)), labels
        said.append(page.locator("section.main, [data-testid='stMain']").first.inner_text())
    return "\n".join(said)


def test_the_tour_walks_the_shipped_multi30k_model_at_1280_px(shipped_app, browser):
    app, logged = shipped_app, len(shipped_app.log_text())  # the server's log before this test
    page = new_page(browser)
    page.set_viewport_size({"width": 1280, "height": 720})
    query = urlencode({"model": "shipped:multi30k-en-de", "text": CAPTION, "present": "1"})
    page.goto(f"{app.url}/learn?{query}")
    said = _walk_the_tour(page)
    assert "multi30k-en-de" in said and "no cross-attention" not in said
    assert re.search(r"Step 1 chose ‹.+› with probability", said)  # the greedy step, the model's own
    assert "Traceback" not in app.log_text()[logged:]


def test_the_tour_walks_a_reversal_model_just_trained_on_the_train_page(server, page):
    page.get_by_role("heading", name="Attention Studio").wait_for(timeout=60_000)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Train", exact=True).click()
    choose(page, "train_preset", "tiny")
    page.wait_for_function("() => document.querySelector('.st-key-train_max_steps input')?.value === '600'",
                           timeout=120_000)
    page.locator(".st-key-train_settings_open summary").click()
    for key, value in TRAIN_FORM.items():
        field = page.locator(f".st-key-{key} input")
        field.fill(str(value))
        field.press("Tab")
    page.locator(".st-key-train_start button").click()
    page.get_by_text(re.compile(r"^Finished · reverse run #\d+ · done at step 40 in")).wait_for(timeout=180_000)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Learn", exact=True).click()
    page.get_by_role("heading", name="Learn: attention step by step").wait_for(timeout=60_000)
    page.get_by_text(re.compile(r"^Weights of step 40\b")).first.wait_for(timeout=60_000)  # the run just trained
    said = _walk_the_tour(page)
    assert "no cross-attention" not in said
    assert "Traceback" not in server.log_text()
