"""The stage demo started from the Train page with the page open in Chromium at 1280x720: for each seed,
switch on Stage demo, set the seed, press Train and read how the run ended from the page ("the picture is clean at
step N after X s of training (exact match E, head L1H1 A aligned)"), with the load beside it.

    PYTHONPATH=. .venv/bin/python -m bench.app.stage_demo [--task reverse] [--seeds 0 1 2 3 4]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from pathlib import Path

from studio_browser import launch_chromium, new_page, running_app, shipped_checkpoints
from ui.train import TASKS

LONG = True  # five stage-demo trainings from the Train page

ENDED = re.compile(r"the picture is (clean|not clean yet) at step ([\d,]+) after ([\d.]+) s(?: of training)?"
                   r"(?: \(exact match ([\d.]+)(?:, head (\S+) ([\d.]+) aligned)?\))?")


def _fill(page, key: str, value: object) -> None:
    field = page.locator(f".st-key-{key} input")
    field.fill(str(value))
    field.press("Tab")


def one_run(page, url: str, task: str, seed: int, timeout_s: float) -> dict:
    """Open the Train page, start the stage demo with `seed`, wait for its end, read the result."""
    page.goto(f"{url}/train")
    page.locator(".st-key-train_start button").wait_for(timeout=120_000)
    if task != "reverse":
        page.locator(".st-key-train_task [role='combobox']").click()
        page.get_by_role("option", name=TASKS[task], exact=True).click()
        page.wait_for_function(f"() => document.querySelector('.st-key-train_task')?.innerText.includes("
                               f"{json.dumps(TASKS[task])})")
    page.locator(".st-key-train_stage label").click()
    page.get_by_text(re.compile("^Stage demo: trains until the picture is clean")).wait_for(timeout=60_000)
    page.locator(".st-key-train_settings_open summary").click()
    _fill(page, "train_seed", seed)
    page.locator(".st-key-train_settings_open summary").click()  # closed again: the page as the speaker sees it
    page.locator(".st-key-train_start button").click()
    ended = page.get_by_text(ENDED).first
    ended.wait_for(timeout=timeout_s * 1000)
    found = ENDED.search(ended.inner_text())
    state, step, seconds, exact, head, aligned = found.groups()
    return {"task": task, "seed": seed, "clean": state == "clean", "steps": int(step.replace(",", "")),
            "train_s": float(seconds), "exact_match": float(exact) if exact else None, "head": head,
            "alignment": float(aligned) if aligned else None, "load": round(os.getloadavg()[0], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="reverse", choices=("reverse", "toy-en-de"))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--timeout", type=float, default=400.0, help="seconds to wait for one run's end")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="stage-demo-runs-") as runs, \
            running_app(shipped_checkpoints(), Path(runs)) as server, sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = new_page(browser)
            page.set_viewport_size({"width": 1280, "height": 720})
            rows = []
            for seed in args.seeds:
                rows.append(one_run(page, server.url, args.task, seed, args.timeout))
                print(json.dumps(rows[-1]), flush=True)
        finally:
            browser.close()
    seconds = ", ".join(f"{r['train_s']:g}" for r in rows if r["clean"]) or "-"
    print(f"{args.task} from the Train page in Chromium: {sum(r['clean'] for r in rows)} of {len(rows)} seeds clean; "
          f"training s {seconds} (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
