"""Screenshots of Decode's logit lens, its layers x steps grid, sampling and the beam tree for docs/lens-and-beams.md
(docs/screenshots/), taken from the real app in headless Chromium.

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.lens [--out docs/screenshots]

The shipped Multi30k model on "A man in a blue shirt is riding a bike ." (the app's own example sentence): the lens
at step 3 (lens.png: what each layer predicts there; lens_grid.png: the chosen token's rank at every layer and step),
a sample at temperature 1.5, top-k 20, top-p 0.9, seed 4, at step 4 (sampling.png: the settings, the step and what it
was drawn from), and the width-4 beam tree with
the best hypothesis's cross-attention (beam_tree.png). Each view is captured as the element the page draws it in.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.screenshots.pages import WIDTH, screenshot_app
from studio_browser import new_page, wait_charts, wait_idle

TEXT = "A man in a blue shirt is riding a bike ."
MODEL = "shipped:multi30k-en-de"
LENS_HEADING = "What each layer of"
GRID_HEADING = "The chosen token's rank at every layer and step"


def _tall(page: Any) -> None:
    """The viewport as tall as Streamlit's scrolling main area, so an element anywhere on it can be captured whole."""
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": WIDTH, "height": max(int(height), 900)})
    page.wait_for_timeout(600)
    wait_idle(page)


def _expander(page: Any, title: str, path: Path) -> None:
    _tall(page)
    page.locator('[data-testid="stExpander"]').filter(has_text=title).first.screenshot(path=str(path))


def _between(page: Any, first: str, last: str | None, path: Path) -> None:
    """The main area from the heading starting with `first` to the one starting with `last` (or the area's end)."""
    _tall(page)
    box = page.evaluate("""([first, last]) => {
        const main = document.querySelector('[data-testid="stMain"]').getBoundingClientRect();
        const heads = [...document.querySelectorAll('.studio-chart-heading, h3')];
        const top = heads.find(h => h.textContent.trim().startsWith(first)).getBoundingClientRect().top;
        const end = last ? heads.find(h => h.textContent.trim().startsWith(last)) : null;
        const bottom = end ? end.getBoundingClientRect().top : main.bottom;
        return {x: main.left, y: top - 12, width: main.width, height: bottom - top + 4};
    }""", [first, last])
    page.screenshot(path=str(path), clip=box)


def _above(page: Any, title: str, path: Path) -> None:
    """The main area from its top to the expander titled `title` (the sidebar left out)."""
    _tall(page)
    box = page.evaluate("""(title) => {
        const main = document.querySelector('[data-testid="stMain"]').getBoundingClientRect();
        const end = [...document.querySelectorAll('[data-testid="stExpander"]')]
            .find(e => e.textContent.includes(title)).getBoundingClientRect().top;
        return {x: main.left, y: main.top, width: main.width, height: end - main.top - 8};
    }""", title)
    page.screenshot(path=str(path), clip=box)


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        page = new_page(browser)
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        page.goto(f"{server.url}/decode?{urlencode({'model': MODEL, 'text': TEXT, 'step': '3'})}")
        wait_charts(page, r"Cross-attention", 1, heading="Step 3 of", timeout_ms=120_000)
        page.locator('[data-testid="stExpander"]').filter(has_text="What each layer predicts").first \
            .locator("summary").click()
        wait_charts(page, GRID_HEADING, 1, timeout_ms=120_000)
        _between(page, LENS_HEADING, GRID_HEADING, out / "lens.png")
        _expander(page, "What each layer predicts", out / "lens_grid.png")
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        sample = {"model": MODEL, "text": TEXT, "step": "4", "temperature": "1.5", "sample_topk": "20",
                  "top_p": "0.9", "seed": "4"}
        page.goto(f"{server.url}/decode?{urlencode(sample)}")
        wait_charts(page, r"was drawn at temperature", 1, heading="Step 4 of", timeout_ms=120_000)
        _above(page, "Attribution: what the chosen token depends on", out / "sampling.png")
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        page.goto(f"{server.url}/decode?{urlencode({'model': MODEL, 'text': TEXT, 'beam': '4'})}")
        wait_charts(page, r"The beam tree", 1, timeout_ms=180_000)
        wait_charts(page, r"Cross-attention of step", 1, timeout_ms=60_000)
        _expander(page, "Beam search: the roads not taken", out / "beam_tree.png")
    print(f"wrote lens.png, lens_grid.png, sampling.png and beam_tree.png to {out}")


if __name__ == "__main__":
    main()
