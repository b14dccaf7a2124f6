"""Screenshots of dictionary features for docs/dictionaries.md (docs/screenshots/), taken from the real app in
headless Chromium at 1280 px.

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.dictionaries [--out docs/screenshots]

feature_page.png: the Features page on the shipped induction model and its dictionary induction-resid-L2, feature
#385 (a link names both), its features read over 300 of the task's streams: the finder, then the feature's
strongest activations by decile (each right after `3`), the tokens it promotes and the heads that read it.
feature_qk.png: the Attention page on the same model, self:L2H2 at an induction cell (the query `3` inside the
repeat, the key right after its first occurrence), What made this score one level down: the score in dictionary
features.
train_entry.png: the Train page's sidebar on the same model, its card's entry "Train a dictionary on this model"
clicked: the Features page with the training form open, the model's stream resid:L2 preselected (1280 x 720).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.screenshots.pages import full_page, screenshot_app
from studio_browser import new_page, wait_charts, wait_idle

PAGE_WIDTH = 1280
STREAM = "kQ3xBn7pLmZa3xBn7pW"  # a chunk "3xBn7p" repeated: at the second `3` the induction head looks after the first
FEATURE = {"model": "shipped:induction", "dict": "induction-resid-L2", "feature": "385"}
QK = {"model": "shipped:induction", "text": STREAM, "kind": "self", "layer": "2", "head": "2",
      "qkq": str(STREAM.rindex("3") + 1), "qkk": str(STREAM.index("3") + 2)}


def expander(page: Any, path: Path) -> None:
    """What made this score's expander alone, from the page drawn at its full height (nothing scrolled away)."""
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": PAGE_WIDTH, "height": max(int(height), 900)})
    page.wait_for_timeout(1500)
    wait_idle(page)
    box = page.locator('[data-testid="stExpander"]').filter(has_text="What made this score").first.bounding_box()
    page.screenshot(path=str(path), clip={"x": box["x"] - 8, "y": box["y"] - 8, "width": box["width"] + 16,
                                          "height": box["height"] + 16})
    page.set_viewport_size({"width": PAGE_WIDTH, "height": 720})


def train_entry(page: Any, url: str, path: Path) -> None:
    """The card's entry clicked on the Train page: the Features page, its form open, at 1280 x 720."""
    page.set_viewport_size({"width": PAGE_WIDTH, "height": 720})
    page.goto(f"{url}/train?{urlencode({'model': FEATURE['model']})}")
    page.locator(".st-key-sidebar_dictionary_train button").first.click(timeout=120_000)
    page.locator(".st-key-dictionary_train_site input").wait_for(timeout=60_000)
    page.mouse.move(PAGE_WIDTH - 10, 700)  # no tooltip over the card
    page.wait_for_timeout(1000)
    wait_idle(page)
    page.screenshot(path=str(path))


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        page = new_page(browser)
        page.set_viewport_size({"width": PAGE_WIDTH, "height": 720})
        page.goto(f"{server.url}/dictionary?{urlencode(FEATURE)}")
        page.locator(".st-key-dictionary_features_run button").click()
        wait_charts(page, r"by activation decile", 1, timeout_ms=180_000)
        full_page(page, out / "feature_page.png", width=PAGE_WIDTH)
        page.goto(f"{server.url}/attention?{urlencode(QK)}")
        wait_charts(page, r".", 1, timeout_ms=180_000)
        page.locator(".st-key-attention_feature_qk_on label").click()
        wait_charts(page, r"in dictionary features", 1, timeout_ms=180_000)
        page.wait_for_timeout(1000)
        expander(page, out / "feature_qk.png")
        train_entry(page, server.url, out / "train_entry.png")
    print(f"wrote feature_page.png, feature_qk.png, train_entry.png to {out}")


if __name__ == "__main__":
    main()
