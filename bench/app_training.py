"""Training throughput in the app (Train page, in a real browser) against the CLI, on the same settings.

    PYTHONPATH=. .venv/bin/python -m bench.app_training [--task reverse] [--steps 400] [--repeats 1] [--json PATH]

Both train the task's defaults (seed 0, the same 50,000 generated examples, the same model, batches and LR
schedule) for a fixed number of steps and save a checkpoint; tokens come from its per-step history. Two figures:
- step time: target tokens / the Trainer's own clock (time inside train_step only: forward, backward, Adam);
- wall clock: what a user sees. CLI: its progress line's steps/s (wall time from its first to its last step,
  evaluation excluded). App: the median of the "Tokens / s" the Train page shows while training (the job's rate
  over the last 3 s of wall time, so it includes the app's overheads: weight snapshots every second, the probe
  decoded every few steps, the page polling the job, the Streamlit server).
Thread settings: the CLI runs with torch's default intra-op threads (one per core) unless OMP_NUM_THREADS is set;
the app sets $ATTENTION_STUDIO_TORCH_THREADS (default 1, see ui/settings.py). Each is run both ways.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.app_driver import ROOT, choose, launch_chromium, new_page, open_page, running_app, runs_finished, wait_rerun
from transformer.checkpoints import load_checkpoint
from ui.train_form import TASKS

TARGET_RATIO = 0.85
_METRICS_JS = """() => Object.fromEntries([...document.querySelectorAll('[data-testid="stMetric"]')].map((m) => [
  m.querySelector('[data-testid="stMetricLabel"]').textContent.trim(),
  m.querySelector('[data-testid="stMetricValue"]').textContent.trim()]))"""


@dataclass(frozen=True)
class Throughput:
    """One training run: where, with how many intra-op threads, and its tokens/s."""

    where: str
    threads: str
    steps: int
    tokens: int
    step_seconds: float  # the Trainer's clock
    wall_tokens_per_s: float
    seconds_total: float  # the whole run as the user waits for it (process or click-to-finished)

    @property
    def step_tokens_per_s(self) -> float:
        return self.tokens / self.step_seconds


def _history_totals(checkpoint: Path) -> tuple[int, int, float]:
    history = load_checkpoint(checkpoint, load_optimizer=False).history
    return len(history), sum(int(row["tokens"]) for row in history), float(history[-1]["elapsed"])


def cli_run(task: str, steps: int, threads: int | None, folder: Path) -> Throughput:
    """`python -m transformer train` with the task defaults; threads None = torch's default."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OMP_NUM_THREADS", None)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    out = folder / f"cli-{threads or 'default'}"
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "transformer", "train", "--task", task, "--steps", str(steps),
                           "--seed", "0", "--out", str(out), "--force", "--no-optimizer"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"the CLI failed:\n{done.stderr[-2000:]}")
    rates = re.findall(rf"step {steps}/{steps} .* ([\d.]+) steps/s", done.stderr)
    if not rates:
        raise RuntimeError(f"no final progress line in the CLI's output:\n{done.stderr[-2000:]}")
    n, tokens, step_seconds = _history_totals(out)
    wall = tokens / (n / float(rates[-1]))
    default = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], env=env,
                             capture_output=True, text=True).stdout.strip()
    return Throughput("CLI", f"{threads} (OMP_NUM_THREADS)" if threads else f"{default} (torch default)", n, tokens,
                      step_seconds, wall, seconds)


def _train_in_browser(page: Any, url: str, task: str, steps: int, runs: Path) -> tuple[list[float], float, Path]:
    """Start a run on the Train page, sample its Tokens / s until it finishes, save it; (samples, seconds, dir)."""
    open_page(page, "Train")
    if page.locator(".st-key-train_task [role='combobox']").input_value() != TASKS[task]:
        before = runs_finished(page)
        choose(page, "train_task", TASKS[task])
        wait_rerun(page, before)
    for key, value in {"train_max_steps": steps, "train_max_seconds": 600}.items():
        field = page.locator(f".st-key-{key} input")
        field.fill(str(value))
        field.press("Tab")
    samples = []
    began = time.perf_counter()
    page.locator(".st-key-train_start button").click()
    finished = page.get_by_text(re.compile(rf"^Finished · {re.escape(task)} · step {steps:,} of {steps:,}"))
    while not finished.count():
        metrics = page.evaluate(_METRICS_JS)
        step = int(metrics.get("Step", "0").replace(",", "") or 0)
        rate = metrics.get("Tokens / s", "–").replace(",", "")
        if step >= 50 and rate.replace(".", "").isdigit():  # past the first 3-s window of the rate
            samples.append(float(rate))
        if time.perf_counter() - began > 600:
            raise TimeoutError("the in-app run did not finish within 600 s")
        page.wait_for_timeout(1000)  # the page's own refresh period
    seconds = time.perf_counter() - began
    page.locator(".st-key-train_save_name input").fill("bench-app")
    page.locator(".st-key-train_save_name input").press("Tab")
    page.locator(".st-key-train_save button").click()
    page.get_by_text(re.compile("^Saved as")).wait_for(timeout=60_000)
    return samples, seconds, runs / "bench-app"


def app_run(task: str, steps: int, threads: int, folder: Path, checkpoints: Path) -> Throughput:
    """The same training started from the Train page of a real app server (ATTENTION_STUDIO_TORCH_THREADS)."""
    from playwright.sync_api import sync_playwright

    runs = folder / f"runs-{threads}"
    with running_app(checkpoints, runs, extra_env={"ATTENTION_STUDIO_TORCH_THREADS": str(threads)}) as server, \
            sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = new_page(browser)
            page.goto(server.url)
            samples, seconds, saved = _train_in_browser(page, server.url, task, steps, runs)
        finally:
            browser.close()
    if not samples:
        raise RuntimeError("the Train page never showed a training rate (the run was too short?)")
    n, tokens, step_seconds = _history_totals(saved)
    return Throughput("app", f"{threads} (ATTENTION_STUDIO_TORCH_THREADS)", n, tokens, step_seconds,
                      statistics.median(samples), seconds)


def _median_by_setting(runs: list[Throughput]) -> dict[tuple[str, str], tuple[float, float]]:
    """(where, threads) -> median (step-time, wall-clock) tokens/s over the repeats."""
    settings = dict.fromkeys((r.where, r.threads) for r in runs)
    return {key: (statistics.median(r.step_tokens_per_s for r in runs if (r.where, r.threads) == key),
                  statistics.median(r.wall_tokens_per_s for r in runs if (r.where, r.threads) == key))
            for key in settings}


def report(runs: list[Throughput]) -> str:
    """A Markdown table of every run, then each app setting against each CLI setting (target: at least 85 %)."""
    lines = ["| where | intra-op threads | steps | tokens/s, step time | tokens/s, wall clock | run, s |",
             "|---|---|--:|--:|--:|--:|"]
    lines += [f"| {r.where} | {r.threads} | {r.steps} | {r.step_tokens_per_s:,.0f} | {r.wall_tokens_per_s:,.0f} | "
              f"{r.seconds_total:.1f} |" for r in runs]
    medians = _median_by_setting(runs)
    lines.append("")
    for (where, app_threads), (app_step, app_wall) in medians.items():
        if where != "app":
            continue
        for (base_where, cli_threads), (cli_step, cli_wall) in medians.items():
            if base_where != "CLI":
                continue
            verdict = "pass" if app_wall / cli_wall >= TARGET_RATIO else "**miss**"
            lines.append(f"- app, {app_threads} vs CLI, {cli_threads}: wall clock {app_wall / cli_wall:.0%}, "
                         f"step time {app_step / cli_step:.0%} (target ≥ {TARGET_RATIO:.0%} on the wall clock: "
                         f"{verdict})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="reverse", choices=("reverse", "copy", "sort", "toy-en-de"))
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=1, help="rounds of the four runs (interleaved)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    results: list[Throughput] = []
    with tempfile.TemporaryDirectory(prefix="attention-studio-bench-") as tmp:
        folder = Path(tmp)
        checkpoints = folder / "no-checkpoints"  # the Train page needs none
        for _ in range(args.repeats):
            results.append(cli_run(args.task, args.steps, None, folder))
            results.append(app_run(args.task, args.steps, 1, folder, checkpoints))
            results.append(cli_run(args.task, args.steps, 1, folder))
            results.append(app_run(args.task, args.steps, 2, folder, checkpoints))
    print(f"task {args.task}, task defaults, {args.steps} steps, seed 0; 1-min load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after")
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"step_tokens_per_s": r.step_tokens_per_s} for r in results],
                                        indent=1))


if __name__ == "__main__":
    main()
