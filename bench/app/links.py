"""How fast a shared link opens on a warm server, against the plain first page in the same run (headless Chromium).

    PYTHONPATH=. .venv/bin/python -m bench.app.links [--checkpoints DIR] [--n 5]

Each sample opens a new browser context (its own session, an empty browser cache: a first visit) on a warm server and
times navigation start to the first frame at which the view the link names is drawn on an idle page: the Decode page's
"Step 3 of" heading and its step charts headed "step 3 · layer 2 · head 2", or the Attention map of the gallery's
reversal view. The baselines are the home page and the Decode page without parameters (its default model, input
and step 1), opened the same way in the same run: the Decode link against the Decode page is the cost of the link.

The new context's window is open on about:blank for SETTLE_MS before the link is opened, as a person's browser
window is open before they paste a link: in headless Chromium each new window starts its own renderer for the address
bar's popup (~0.6 s of CPU), which otherwise ran beside the page on the same 2 cores (measured in session 7: the cold
link rows were ~0.4–0.5 s slower with it, `--settle-ms 0`; bench/README.md has both).

A second set of rows, labelled "visited browser", opens the same addresses in a new tab of one browser context that
has opened every page before: its HTTP cache is warm (Streamlit's code is served as immutable files), but each tab
is still a new Streamlit session. The cold rows (a first visit) are the ones the 2-s target is judged on.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from bench.common.measures import Measure, table
from studio_browser import (
    charts_condition,
    launch_chromium,
    new_page,
    page_errors,
    running_app,
    shipped_checkpoints,
    wait_for,
)

LINK_MS = 2000
SETTLE_MS = 1200  # a new window's own start-up, before the link is opened
DECODE_LINK = ("decode", {"model": "shipped:toy-en-de", "text": "the clever woman reads a book", "step": "3",
                          "layer": "2", "head": "2"}, charts_condition(r"step 3 · layer 2 · head 2\b", 2,
                                                                       heading="Step 3 of"))
ATTENTION_LINK = ("attention", {"model": "shipped:reverse", "text": "attentionisall", "kind": "cross", "layer": "1",
                                "head": "4"}, charts_condition(r"Cross-attention · layer 1 · head 4\b", 1))
HOME = ("", {}, charts_condition("", 1))
DECODE_PLAIN = ("decode", {}, charts_condition(r"step 1 · layer \d+", 2, heading="Step 1 of"))


def open_ms(browser, url: str, condition: tuple[str, list], errors: list[str], visited=None,
            settle_ms: int = SETTLE_MS) -> float:
    """Navigation start to the condition holding, in a new session: a new browser context (an empty cache) whose
    window has been open `settle_ms`, or given `visited` (a browser context that opened the app before), a new tab."""
    if visited is None:
        page = new_page(browser)
        if settle_ms:
            page.goto("about:blank")
            page.wait_for_timeout(settle_ms)
    else:
        page = visited.new_page()
    try:
        page.goto(url)
        drawn = wait_for(page, condition, timeout_ms=120_000).drawn_at
        errors += page_errors(page)
        return drawn
    finally:
        if visited is None:
            page.context.close()
        else:
            page.close()


def run(checkpoints: Path, n: int, settle_ms: int = SETTLE_MS) -> tuple[list[Measure], list[str]]:
    """Home page, Decode page, a Decode link and an Attention link, n new sessions each, interleaved, on one warm
    server: each in a new browser context (the cold rows, first) and in a new tab of a visited browser (the rest)."""
    from playwright.sync_api import sync_playwright

    samples: dict[str, list[float]] = {"home": [], "decode_plain": [], "decode": [], "attention": []}
    warm: dict[str, list[float]] = {name: [] for name in samples}
    errors: list[str] = []
    with tempfile.TemporaryDirectory() as runs, running_app(checkpoints, Path(runs)) as server, \
            sync_playwright() as pw:
        browser = launch_chromium(pw)
        targets = {"home": HOME, "decode_plain": DECODE_PLAIN, "decode": DECODE_LINK, "attention": ATTENTION_LINK}
        urls = {name: f"{server.url}/{page}" + (f"?{urlencode(params)}" if params else "")
                for name, (page, params, _) in targets.items()}
        for name in targets:  # warm up: each page's first run and each model's first load
            open_ms(browser, urls[name], targets[name][2], errors)
        visited = new_page(browser).context  # the browser that has been here: every page once, its cache kept
        for name in targets:
            open_ms(browser, urls[name], targets[name][2], errors, visited)
        for _ in range(n):
            for name in targets:
                samples[name].append(open_ms(browser, urls[name], targets[name][2], errors, settle_ms=settle_ms))
                warm[name].append(open_ms(browser, urls[name], targets[name][2], errors, visited))
        visited.close()
        browser.close()
        errors += ["server log: Traceback"] if "Traceback" in server.log_text() else []
    measures = [Measure("home page, new session on a warm server (baseline)", tuple(samples["home"])),
                Measure("Decode page without parameters → step 1 charts (baseline)", tuple(samples["decode_plain"])),
                Measure("shared Decode link (step 3, layer 2, head 2) → its charts", tuple(samples["decode"]),
                        LINK_MS),
                Measure("shared Attention link (reversal, L1 H4) → its map", tuple(samples["attention"]), LINK_MS),
                Measure("visited browser, new tab: home page", tuple(warm["home"])),
                Measure("visited browser, new tab: Decode page without parameters", tuple(warm["decode_plain"])),
                Measure("visited browser, new tab: shared Decode link", tuple(warm["decode"])),
                Measure("visited browser, new tab: shared Attention link", tuple(warm["attention"]))]
    return measures, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=Path, help="checkpoint root (default: checkpoints/)")
    parser.add_argument("--n", type=int, default=5, help="new sessions per link")
    parser.add_argument("--settle-ms", type=int, default=SETTLE_MS,
                        help="how long a new window is open before the link is opened (0: open it at once)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    measures, errors = run(args.checkpoints or shipped_checkpoints(), args.n, args.settle_ms)
    print(f"1-min load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; new windows settled "
          f"{args.settle_ms} ms")
    print(table(measures))
    home, decode = measures[0].p50, measures[1].p50
    print(f"Decode link / Decode page without parameters (p50): {measures[2].p50 / decode:.2f}")
    print(f"Attention link / home page (p50): {measures[3].p50 / home:.2f}")
    print("errors on the page:", errors or "none")


if __name__ == "__main__":
    main()
