"""Screenshots of Compare's edit mode and its activation patching for docs/patching.md (docs/screenshots/), taken from
the real app in headless Chromium.

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.patching [--out docs/screenshots]

Edit and compare (edit_compare.png, the page down to its patching section): the shipped Multi30k model on "a black
dog runs across the green grass ." and its edit with "cat" (a one-word swap that changes the German article's
gender too), on the cross-attention head that moved most (layer 1, head 3). Patching (patching.png, the patching
section): the shipped reversal model on "abcdefghijkl" and "abcdefxhijkl", every site patched at the step that
emits the replaced character, with that character as the contrast.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.screenshots.pages import WIDTH, full_page, screenshot_app
from studio_browser import new_page, wait_charts

EDIT_LINK = {"model": "shipped:multi30k-en-de", "cmode": "edit", "text": "a black dog runs across the green grass .",
             "edit": "a black cat runs across the green grass .", "kind": "cross", "layer": "1", "head": "3"}
PATCH_LINK = {"model": "shipped:reverse", "cmode": "edit", "text": "abcdefghijkl", "edit": "abcdefxhijkl",
              "kind": "cross", "layer": "1", "head": "mean"}
PATCH_HEADING = "Where does A's answer live?"


def section(page: Any, path: Path, above: bool) -> None:
    """The whole page's screenshot cut at the patching section's heading: what is above it, or it and below."""
    from PIL import Image

    full_page(page, path)
    left, top = page.evaluate("""(text) => {
        const main = document.querySelector('[data-testid="stMain"]');
        const heading = [...document.querySelectorAll('h3')].find(h => h.textContent.startsWith(text));
        return [main.getBoundingClientRect().left, heading.getBoundingClientRect().top + main.scrollTop];
    }""", PATCH_HEADING)
    with Image.open(path) as image:  # below the heading, the page without the sidebar (empty that far down)
        box = (0, 0, image.width, int(top) - 24) if above else (int(left), int(top) - 24, image.width, image.height)
        image.crop(box).save(path)


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        page = new_page(browser)
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        page.goto(f"{server.url}/compare?{urlencode(EDIT_LINK)}")
        wait_charts(page, r"B − A", 1, timeout_ms=120_000)
        section(page, out / "edit_compare.png", above=True)
        page.goto(f"{server.url}/compare?{urlencode(PATCH_LINK)}")
        wait_charts(page, r"B − A", 1, timeout_ms=120_000)
        contrast = page.locator(".st-key-compare_patch_contrast input")
        contrast.fill("x")
        contrast.press("Enter")
        page.wait_for_timeout(1500)
        page.locator(".st-key-compare_patch_exact button").click()
        wait_charts(page, r"The encoder output at each source position", 1, timeout_ms=180_000)
        section(page, out / "patching.png", above=False)
    print(f"wrote edit_compare.png and patching.png to {out}")


if __name__ == "__main__":
    main()
