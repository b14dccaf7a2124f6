"""The stage demo started from the Train page with the page open in Chromium at 1280x720, against the CLI's
command in the same run: for each seed, first the baseline, `python -m transformer train --task T --stage --seed S`
(no browser; it launches the recipe's processes itself), read from its "stage demo:" line, then on the Train page:
switch on Stage demo, set the seed, press Train and read how the run ended from the page ("the picture is clean at
step N after X s of training (exact match E, head L1H1 A aligned)"). Wall: the CLI's command to its last line, the
page's Train press to its end message. The load beside each.

    PYTHONPATH=. .venv/bin/python -m bench.app.stage_demo [--task reverse] [--seeds 0 1 2 3 4] [--no-cli]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from studio_browser import ROOT, launch_chromium, new_page, running_app, shipped_checkpoints
from ui.train import TASKS

LONG = True  # five stage-demo trainings from the Train page

ENDED = re.compile(r"the picture is (clean|not clean yet) at step ([\d,]+) after ([\d.]+) s(?: of training)?"
                   r"(?: \(exact match ([\d.]+)(?:, head (\S+) ([\d.]+) aligned)?\))?")
FINISHED = re.compile(r"^Finished · .+ · done at step [\d,]+ in ")


def _found(found: re.Match | None, task: str, seed: int, wall: float, where: str) -> dict:
    if found is None:
        raise RuntimeError(f"{where}: no end of the stage demo found")
    state, step, seconds, exact, head, aligned = found.groups()
    return {"where": where, "task": task, "seed": seed, "clean": state == "clean", "steps": int(step.replace(",", "")),
            "train_s": float(seconds), "wall_s": round(wall, 1), "exact_match": float(exact) if exact else None,
            "head": head, "alignment": float(aligned) if aligned else None, "load": round(os.getloadavg()[0], 1)}


def cli_run(task: str, seed: int, timeout_s: float) -> dict:
    """The command the docs give, `python -m transformer train --task T --stage --seed S` (no browser)."""
    with tempfile.TemporaryDirectory(prefix="stage-demo-cli-") as tmp:
        cmd = [sys.executable, "-m", "transformer", "train", "--task", task, "--stage", "--seed", str(seed),
               "--out", str(Path(tmp) / "run")]
        began = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.perf_counter() - began
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return _found(ENDED.search(done.stdout), task, seed, wall, "cli")


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
    began = time.perf_counter()
    page.locator(".st-key-train_start button").click()
    ended = page.get_by_text(ENDED).first
    ended.wait_for(timeout=timeout_s * 1000)
    row = _found(ENDED.search(ended.inner_text()), task, seed, time.perf_counter() - began, "page")
    bar = page.get_by_text(FINISHED).first  # the finished run's bar reads as finished, not as a run that died
    bar.wait_for(timeout=60_000)
    return {**row, "bar": bar.inner_text()}


def _summary(rows: list[dict], where: str) -> str:
    mine = [r for r in rows if r["where"] == where]
    clean = [r for r in mine if r["clean"]]

    def listed(key: str) -> str:
        return ", ".join(f"{r[key]:g}" for r in clean) or "-"

    return (f"{where}: {len(clean)} of {len(mine)} seeds clean; steps {listed('steps')}; training s "
            f"{listed('train_s')}; wall s {listed('wall_s')}")


def _ratio(rows: list[dict], key: str) -> str:
    """The page's figure over the CLI's, per seed both ran clean, as a range."""
    by_seed = {}
    for r in rows:
        by_seed.setdefault(r["seed"], {})[r["where"]] = r
    ratios = [pair["page"][key] / pair["cli"][key] for pair in by_seed.values()
              if {"page", "cli"} <= set(pair) and pair["page"]["clean"] and pair["cli"]["clean"]]
    return f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="reverse", choices=("reverse", "toy-en-de"))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--timeout", type=float, default=400.0, help="seconds to wait for one run's end")
    parser.add_argument("--no-cli", action="store_true", help="leave out the CLI's baseline run before each seed")
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
                if not args.no_cli:
                    page.goto("about:blank")  # the baseline with no page drawing
                    rows.append(cli_run(args.task, seed, args.timeout))
                    print(json.dumps(rows[-1]), flush=True)
                rows.append(one_run(page, server.url, args.task, seed, args.timeout))
                print(json.dumps(rows[-1]), flush=True)
        finally:
            browser.close()
    print(f"{args.task}, load {os.getloadavg()[0]:.1f} at the end", flush=True)
    for where in ("cli", "page")[args.no_cli:]:
        print(_summary(rows, where), flush=True)
    if not args.no_cli:
        print(f"page / CLI per seed: training s {_ratio(rows, 'train_s')}, wall s {_ratio(rows, 'wall_s')}", flush=True)


if __name__ == "__main__":
    main()
