"""How long Home's offers to a newcomer take, against Home itself in the same run (headless Chromium, 1280x900).

    PYTHONPATH=. .venv/bin/python -m bench.app.home_waits [--n 3]

Each sample starts a server (a fresh cache, the default model warmed as `make run` warms it), opens Home in a new
browser session and times its first view (the baseline: navigation start to the Try-it map drawn), then from the
pointer press to the answer drawn on an idle page: "Open the toy English → German model" → Home's map of the toy
model, or the example link "A word-alignment head" → its Attention map (one action per server: a second would find
the first's decode in the cache).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench.common.measures import Measure, table
from studio_browser import (
    charts_condition,
    last_press,
    launch_chromium,
    new_page,
    page_errors,
    running_app,
    shipped_checkpoints,
    wait_for,
)

TARGET_MS = 1000
HOME = charts_condition("", 1)
LINK = charts_condition(r"Cross-attention · layer 2 · head 2\b", 1)


def _wait_log(server, text: str, seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while text not in server.log_text():
        if time.monotonic() > end:
            raise TimeoutError(f"no {text!r} in the server log")
        time.sleep(0.2)


def sample(browser, checkpoints: Path, errors: list[str]) -> tuple[float, float, float]:
    """(Home's first view ms, toy button ms, example link ms), each action on a new server and a new session."""
    out, home = [], []
    for action in ("toy", "link"):
        with tempfile.TemporaryDirectory() as runs, running_app(checkpoints, Path(runs)) as server:
            _wait_log(server, "warmed up in")
            page = new_page(browser)
            page.set_viewport_size({"width": 1280, "height": 900})
            page.goto(server.url)
            home.append(wait_for(page, HOME, 120_000).drawn_at)
            if action == "toy":
                page.locator(".st-key-home_toy button").click()
                page.get_by_text("Try it · toy-en-de").wait_for(timeout=120_000)
                drawn = wait_for(page, charts_condition("", 1), 120_000).drawn_at
            else:
                page.get_by_role("link", name="A word-alignment head").click()
                drawn = wait_for(page, LINK, 120_000).drawn_at
            out.append(drawn - last_press(page))
            errors += page_errors(page)
            page.context.close()
    return min(home), out[0], out[1]


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3, help="samples per row (each on its own server)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows: list[list[float]] = [[], [], []]
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        for _ in range(args.n):
            for row, ms in zip(rows, sample(browser, shipped_checkpoints(), errors), strict=True):
                row.append(ms)
        browser.close()
    measures = [Measure("Home's first view, new session (baseline)", tuple(rows[0])),
                Measure("Open the toy English → German model → its map", tuple(rows[1]), TARGET_MS),
                Measure("example link (A word-alignment head) → its Attention map", tuple(rows[2]), TARGET_MS)]
    print(f"1-min load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(table(measures))
    print(f"against Home's first view (p50): toy {measures[1].p50 / measures[0].p50:.2f}, "
          f"link {measures[2].p50 / measures[0].p50:.2f}")
    print("errors on the page:", errors or "none")


if __name__ == "__main__":
    main()
