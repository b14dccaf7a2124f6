"""Screenshots of Compare's edit mode and its activation patching for docs/patching.md (docs/screenshots/), taken from
the real app in headless Chromium.

    PYTHONPATH=. .venv/bin/python -m bench.screenshots_patching [--out docs/screenshots]

The shipped reversal model on "abcdefghijkl" and its edit "abcdefxhijkl": the edit compared (edit_compare.png), then
every site patched with the replaced character as the contrast (patching.png).
"""
from __future__ import annotations

from urllib.parse import urlencode

from bench.screenshots import WIDTH, full_page, screenshot_app
from studio_browser import new_page, wait_charts

LINK = {"model": "shipped:reverse", "cmode": "edit", "text": "abcdefghijkl", "edit": "abcdefxhijkl", "kind": "cross",
        "layer": "1", "head": "mean"}


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        page = new_page(browser)
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        page.goto(f"{server.url}/compare?{urlencode(LINK)}")
        wait_charts(page, r"B − A", 1, timeout_ms=120_000)
        full_page(page, out / "edit_compare.png")
        contrast = page.locator(".st-key-compare_patch_contrast input")
        contrast.fill("x")
        contrast.press("Enter")
        page.wait_for_timeout(1500)
        page.locator(".st-key-compare_patch_exact button").click()
        wait_charts(page, r"The encoder output at each source position", 1, timeout_ms=180_000)
        full_page(page, out / "patching.png")
    print(f"wrote edit_compare.png and patching.png to {out}")


if __name__ == "__main__":
    main()
