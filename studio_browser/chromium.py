"""Debian's Chromium, headless, driven by Playwright (which cannot download its own browsers here)."""
from __future__ import annotations

import asyncio
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

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


class SharedChromium:
    """One Playwright driver and one Chromium kept for a whole test session of a thread, lent to one caller at a time.

    Playwright's sync API leaves its event loop marked as the thread's running loop between its calls, so while it
    lives `asyncio.run()` (and a second `sync_playwright()`) refuse to start in that thread. Between loans the loop is
    unmarked, so the code that runs in between (other tests of a pytest-xdist worker) sees no loop; a loan marks it
    again, as Playwright's own calls leave it. Nothing else of Playwright is touched: its loop does not run between
    sync calls anyway.
    """

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._loop = asyncio.get_running_loop()  # Playwright's, marked running by the call that just returned
        try:
            self._browser = launch_chromium(self._playwright)
        except BaseException:
            self._playwright.stop()
            raise
        finally:
            self._park()

    @contextmanager
    def lent(self) -> Iterator[Any]:
        """The browser, for one caller; every context the caller opened is closed when it gives it back."""
        asyncio._set_running_loop(self._loop)
        try:
            yield self._browser
        finally:
            try:
                for context in self._browser.contexts:
                    context.close()
            finally:
                self._park()

    def close(self) -> None:
        """Close the browser and stop Playwright's driver."""
        asyncio._set_running_loop(self._loop)
        try:
            self._browser.close()
        finally:
            self._playwright.stop()
            self._park()

    @staticmethod
    def _park() -> None:
        asyncio._set_running_loop(None)
