"""In a real browser: the Learn tour walks from the first stage to the last, one → key press a stage, in presenter
mode, every stage drawing its charts without a page error."""
from __future__ import annotations

from studio_browser import page_errors, wait_charts, wait_idle
from ui.views import TOUR

TEXT = "abcdefg"


def test_the_learn_tour_walks_every_stage_with_one_key_press_each(server, page):
    page.goto(f"{server.url}/learn?text={TEXT}&present=1")
    wait_charts(page, r"Query vector", 1, timeout_ms=90_000)
    for stage in TOUR[1:]:
        page.keyboard.press("ArrowRight")
        page.get_by_role("heading", name=stage.title).wait_for(timeout=60_000)
        wait_idle(page, 60_000)
        assert page_errors(page) == [], stage.title
    assert "no cross-attention" not in page.locator("body").inner_text()  # an encoder-decoder has it
