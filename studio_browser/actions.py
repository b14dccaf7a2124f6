"""What a user does on a page: open another page from the sidebar, pick an option in a selectbox."""
from __future__ import annotations

from typing import Any

from .waits import runs_finished, wait_idle, wait_rerun


def open_page(page: Any, title: str, timeout_ms: float = 120_000) -> None:
    """Open a page through the sidebar navigation and wait for its first run to finish (up to two minutes: a fresh
    server warms Home's offers at start-up, and under three test workers a first run outlasted one minute). The page
    it leaves is let finish first: a run of it that ended after the click would be taken for the new page's."""
    wait_idle(page, timeout_ms)
    before = runs_finished(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title, exact=True).click()
    wait_rerun(page, before, timeout_ms)


def open_select(page: Any, key: str) -> None:
    """Open the drop-down of the selectbox with widget key `key`."""
    page.locator(f".st-key-{key} [role='combobox']").click()


def pick_option(page: Any, option: str) -> None:
    """Click `option` in the open drop-down (the rerun it causes is not awaited)."""
    page.get_by_role("option", name=option, exact=True).click()


def choose(page: Any, key: str, option: str) -> None:
    """Pick `option` in the selectbox with widget key `key` (the rerun it causes is not awaited)."""
    open_select(page, key)
    pick_option(page, option)
