"""Screenshots of the circuit view for docs/circuits.md (docs/screenshots/), taken from the real app in headless
Chromium at 1280 px.

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.circuits [--out docs/screenshots]

circuit_reverse.png: Compare's edit mode on the shipped reversal model, "abcdefghij" against "abcdefghik", the
circuit found by EAP-IG (the default) with the slider at the smallest circuit reaching 0.8 and the curve beside it.
circuit_induction.png: the shipped induction model, a repeated chunk against the same stream with its first copy
resampled (one of `induction_pairs`' pairs, typed), the same view.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.screenshots.pages import full_page, screenshot_app
from studio_browser import new_page, wait_charts

PAGE_WIDTH = 1280
HEADING = "Which heads carry it? The circuit"
LINKS = {
    "circuit_reverse.png": {"model": "shipped:reverse", "cmode": "edit", "text": "abcdefghij", "edit": "abcdefghik"},
    "circuit_induction.png": {"model": "shipped:induction", "cmode": "edit", "text": "qwkTz7xqwkTz7",
                              "edit": "qwkTz7xPb3Lm9"},
}


def section(page: Any, path: Path) -> None:
    """The whole page's screenshot cut at the circuit section's heading, the sidebar left out."""
    from PIL import Image

    full_page(page, path, width=PAGE_WIDTH)
    left, top = page.evaluate("""(text) => {
        const main = document.querySelector('[data-testid="stMain"]');
        const heading = [...document.querySelectorAll('h3')].find(h => h.textContent.startsWith(text));
        return [main.getBoundingClientRect().left, heading.getBoundingClientRect().top + main.scrollTop];
    }""", HEADING)
    with Image.open(path) as image:
        image.crop((int(left), int(top) - 24, image.width, image.height)).save(path)


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        page = new_page(browser)
        page.set_viewport_size({"width": PAGE_WIDTH, "height": 720})
        for name, link in LINKS.items():
            page.goto(f"{server.url}/compare?{urlencode(link)}")
            wait_charts(page, r"B − A", 1, timeout_ms=120_000)
            page.locator(".st-key-compare_circuits_run button").click()
            wait_charts(page, r"Circuit of the top", 1, timeout_ms=180_000)
            page.wait_for_timeout(1500)
            section(page, out / name)
    print(f"wrote {', '.join(LINKS)} to {out}")


if __name__ == "__main__":
    main()
