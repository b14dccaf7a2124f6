"""Screenshots of every page for the README (docs/screenshots/*.png), taken from the real app in headless Chromium.

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.pages [--out docs/screenshots]

Home and Decode on the default shipped model (Decode three steps in), Attention on the same input, Train after a
run of the `reverse` task with its default settings (15 s). Each page is captured whole (its scrolling main area
unrolled).
"""
from __future__ import annotations

import argparse
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from studio_browser import (
    ROOT,
    launch_chromium,
    new_page,
    open_page,
    running_app,
    shipped_checkpoints,
    wait_charts,
    wait_decode_step,
    wait_idle,
)

WIDTH = 1440


def full_page(page: Any, path: Path, width: int = WIDTH) -> None:
    """Screenshot of the whole page: the viewport grows to the height of Streamlit's scrolling main area."""
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": width, "height": max(int(height), 900)})
    page.wait_for_timeout(600)
    wait_idle(page)
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": width, "height": 1000})


@contextmanager
def screenshot_app(description: str) -> Iterator[tuple[Path, Any, Any]]:
    """Read --out, serve the app on the shipped (or dev) checkpoints and start Chromium: (out folder, server,
    browser)."""
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as runs, \
            running_app(shipped_checkpoints(), Path(runs)) as server, sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            yield out, server, browser
        finally:
            browser.close()


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        page = new_page(browser)
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        page.goto(server.url)
        wait_charts(page, r"Cross-attention", 1)
        full_page(page, out / "home.png")
        open_page(page, "Decode")
        wait_decode_step(page, 1)
        for step in (2, 3, 4):
            page.locator(".st-key-decode_next button").click()
            wait_decode_step(page, step)
        full_page(page, out / "decode.png")
        open_page(page, "Attention")
        wait_charts(page, r"heads and mean", 1)
        full_page(page, out / "attention.png")
        open_page(page, "Train")
        page.locator(".st-key-train_start button").click()
        page.get_by_text(re.compile(r"^Finished · ")).wait_for(timeout=120_000)
        wait_charts(page, r"\bStep [\d,]+ · layer \d+", 1)
        full_page(page, out / "train.png")
    print(f"wrote {', '.join(p.name for p in sorted(out.glob('*.png')))} to {out}")


if __name__ == "__main__":
    main()
