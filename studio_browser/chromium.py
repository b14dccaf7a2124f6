"""Debian's Chromium, headless, driven by Playwright (which cannot download its own browsers here)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .waits import PAGE_SETUP_JS

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1000}


def chromium_missing() -> str | None:
    """Why no browser test can run here (one line, a skip's reason), or None when Chromium is installed."""
    if CHROMIUM.exists():
        return None
    return f"no Chromium at {CHROMIUM} (`make test` installs it as root; or apt-get install chromium)"


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, headless (Playwright cannot download its own browsers here); sync or async API."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def new_page(browser: Any) -> Any:
    """A page in a fresh browser context (so its own Streamlit session), set up with PAGE_SETUP_JS."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(PAGE_SETUP_JS)
    return context.new_page()
