"""Training throughput in the app (started from the Train page in a real browser) against the CLI, same settings.

    PYTHONPATH=. .venv/bin/python -m bench.app.training [--task reverse] [--steps 400] [--repeats 1] [--json PATH]

Every run trains the task's defaults (seed 0, the same 50,000 generated examples, model, batches and LR schedule)
for a fixed number of steps and saves a checkpoint, whose per-step history gives the tokens. Two figures:
- step time: target tokens / the Trainer's own clock (time inside train_step only: forward, backward, Adam);
- wall clock: tokens per second of real time while training, what a user waits for. CLI: its progress line's
  steps/s (first to last step, evaluation excluded). App: the step counter the page shows, read once a second
  from step 50 on (the Train page's "Step" metric, or the sidebar's "Training: step N" on another page), so
  it includes the app's own work: weight snapshots, the probe decoded every few steps, the page refreshing.
App runs: with the Train page open (curves and attention timeline refreshing every second), and on the Home
page (only the sidebar's status line refreshes). "shown" is the median "Tokens / s" the Train page displays.
Thread settings: the CLI runs with torch's default intra-op threads (one per core) or OMP_NUM_THREADS=1; the
app as configured (ui/settings.training_threads: all cores but one for the training process, unless
$ATTENTION_STUDIO_TORCH_THREADS is set) or with --app-threads N (0 = as configured).
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

from bench.common.measures import browser_cpu_seconds, cpu_seconds
from studio_browser import ROOT, choose, launch_chromium, new_page, open_page, running_app, runs_finished, wait_rerun
from transformer.store import load_checkpoint
from ui.server import training_threads
from ui.train import TASKS

LONG = True  # trainings from the Train page against the CLI's

TARGET_RATIO = 0.85
SAVE_NAME = "bench-app"
_METRICS_JS = """() => Object.fromEntries([...document.querySelectorAll('[data-testid="stMetric"]')].map((m) => [
  m.querySelector('[data-testid="stMetricLabel"]').textContent.trim(),
  m.querySelector('[data-testid="stMetricValue"]').textContent.trim()]))"""


@dataclass(frozen=True)
class Throughput:
    """One training run: where, how, with how many intra-op threads, and its tokens/s."""

    where: str
    threads: str
    steps: int
    tokens: int
    step_seconds: float  # the Trainer's clock
    wall_steps_per_s: float
    shown_tokens_per_s: float | None = None  # the median rate the Train page displayed
    server_cpu_share: float | None = None  # the app server's CPU seconds per wall second while it trained
    browser_cpu_share: float | None = None  # the same for Chromium (and Playwright)

    @property
    def step_tokens_per_s(self) -> float:
        return self.tokens / self.step_seconds

    @property
    def wall_tokens_per_s(self) -> float:
        return self.wall_steps_per_s * self.tokens / self.steps


def _history_totals(checkpoint: Path) -> tuple[int, int, float]:
    history = load_checkpoint(checkpoint, load_optimizer=False).history
    return len(history), sum(int(row["tokens"]) for row in history), float(history[-1]["elapsed"])


def _torch_default_threads() -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    return subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], env=env,
                          capture_output=True, text=True).stdout.strip()


def cli_run(task: str, steps: int, threads: int, folder: Path) -> Throughput:
    """`python -m transformer train` with the task defaults; threads 0 = torch's default."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OMP_NUM_THREADS", None)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    out = folder / f"cli-{threads or 'default'}"
    done = subprocess.run([sys.executable, "-m", "transformer", "train", "--task", task, "--steps", str(steps),
                           "--seed", "0", "--out", str(out), "--force", "--no-optimizer"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the CLI failed:\n{done.stderr[-2000:]}")
    rates = re.findall(rf"step {steps}/{steps} .* ([\d.]+) steps/s", done.stderr)
    if not rates:
        raise RuntimeError(f"no final progress line in the CLI's output:\n{done.stderr[-2000:]}")
    n, tokens, step_seconds = _history_totals(out)
    label = f"{threads} (OMP_NUM_THREADS)" if threads else f"{_torch_default_threads()} (torch default)"
    return Throughput("CLI", label, n, tokens, step_seconds, float(rates[-1]))


def _progress(page: Any, watching: bool) -> tuple[int, float | None, bool]:
    """(step shown, Tokens / s shown or None, finished) as the page shows them now."""
    if watching:
        metrics = page.evaluate(_METRICS_JS)
        rate = metrics.get("Tokens / s", "–").replace(",", "")
        finished = page.get_by_text(re.compile(r"^Finished · ")).count() > 0
        return int(metrics.get("Step", "0").replace(",", "")), float(rate) if rate[:1].isdigit() else None, finished
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    shown = re.search(r"Training: step ([\d,]+)", sidebar)
    return int(shown.group(1).replace(",", "")) if shown else 0, None, "Last run: finished" in sidebar


def _train_in_browser(page: Any, task: str, steps: int, watching: bool,
                      server_pid: int) -> tuple[float, float | None, tuple[float, float]]:
    """Start a run on the Train page, follow it (there or on Home) until it finishes, save it.

    Returns the wall-clock steps/s between the first reading at step >= 50 and the last one before the end,
    the median Tokens / s the Train page showed (None when not watching it), and the CPU share (cores) of the
    server and of the browser between those readings.
    """
    open_page(page, "Train")
    if page.locator(".st-key-train_task [role='combobox']").input_value() != TASKS[task]:
        before = runs_finished(page)
        choose(page, "train_task", TASKS[task])
        wait_rerun(page, before)
    page.locator(".st-key-train_settings_open summary").click()  # every hyperparameter: one click away
    for key, value in {"train_max_steps": steps, "train_max_seconds": 600}.items():
        field = page.locator(f".st-key-{key} input")
        field.fill(str(value))
        field.press("Tab")
    page.locator(".st-key-train_start button").click()
    page.get_by_text(re.compile("^Training started")).wait_for(timeout=120_000)
    if not watching:
        open_page(page, "Home")
    readings: list[tuple[float, int, float, float]] = []  # (time, step, server CPU s, browser CPU s)
    shown_rates: list[float] = []
    began = time.perf_counter()
    while True:
        step, rate, finished = _progress(page, watching)
        if finished:
            break
        if step >= 50:
            readings.append((time.perf_counter(), step, cpu_seconds(server_pid), browser_cpu_seconds(server_pid)))
            shown_rates += [rate] if rate is not None else []
        if time.perf_counter() - began > 900:
            raise TimeoutError("the in-app run did not finish within 900 s")
        page.wait_for_timeout(1000)  # the page refreshes its progress once a second
    first, last = (readings[0], readings[-1]) if readings else ((0.0, 0, 0.0, 0.0),) * 2
    if last[1] <= first[1]:
        raise RuntimeError("too few progress readings to time the run: train for more steps")
    seconds = last[0] - first[0]
    if not watching:
        open_page(page, "Train")
    page.locator(".st-key-train_save_name input").fill(SAVE_NAME)
    page.locator(".st-key-train_save_name input").press("Tab")
    page.locator(".st-key-train_save button").click()
    page.get_by_text(re.compile("^Saved as")).wait_for(timeout=60_000)
    cpu_share = ((last[2] - first[2]) / seconds, (last[3] - first[3]) / seconds)
    return (last[1] - first[1]) / seconds, statistics.median(shown_rates) if shown_rates else None, cpu_share


def app_run(task: str, steps: int, threads: int, watching: bool, folder: Path) -> Throughput:
    """The same training started from the Train page of a real app server; threads 0 = as the app configures."""
    from playwright.sync_api import sync_playwright

    runs = Path(tempfile.mkdtemp(prefix=f"runs-{threads}-{watching}-", dir=folder))  # a new one per repeat
    no_checkpoints = folder / "no-checkpoints"  # the Train page needs none
    extra_env = {"ATTENTION_STUDIO_TORCH_THREADS": str(threads)} if threads else {}
    with running_app(no_checkpoints, runs, extra_env=extra_env) as server, sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = new_page(browser)
            page.goto(server.url)
            wall, shown, cpu_share = _train_in_browser(page, task, steps, watching, server.pid)
        finally:
            browser.close()
    n, tokens, step_seconds = _history_totals(runs / SAVE_NAME)
    where = "app, Train page open" if watching else "app, on the Home page"
    label = f"{threads} (ATTENTION_STUDIO_TORCH_THREADS)" if threads else f"{training_threads()} (app default)"
    return Throughput(where, label, n, tokens, step_seconds, wall, shown, *cpu_share)


def _medians(runs: list[Throughput]) -> dict[tuple[str, str], tuple[float, float]]:
    """(where, threads) -> median (step-time, wall-clock) tokens/s over the repeats."""
    keys = dict.fromkeys((r.where, r.threads) for r in runs)
    return {key: (statistics.median(r.step_tokens_per_s for r in runs if (r.where, r.threads) == key),
                  statistics.median(r.wall_tokens_per_s for r in runs if (r.where, r.threads) == key))
            for key in keys}


def report(runs: list[Throughput]) -> str:
    """A Markdown table of every run, then each app setting against each CLI setting (target: at least 85 %)."""
    lines = ["| where | intra-op threads | steps | tokens/s, step time | tokens/s, wall clock | tokens/s, shown | "
             "CPU cores used: server / browser |", "|---|---|--:|--:|--:|--:|--:|"]
    lines += [f"| {r.where} | {r.threads} | {r.steps} | {r.step_tokens_per_s:,.0f} | {r.wall_tokens_per_s:,.0f} | "
              f"{'–' if r.shown_tokens_per_s is None else f'{r.shown_tokens_per_s:,.0f}'} | "
              f"{'–' if r.server_cpu_share is None else f'{r.server_cpu_share:.2f} / {r.browser_cpu_share:.2f}'} |"
              for r in runs]
    medians = _medians(runs)
    cli = {key: value for key, value in medians.items() if key[0] == "CLI"}
    lines.append("")
    for (where, threads), (app_step, app_wall) in medians.items():
        for (_, cli_threads), (cli_step, cli_wall) in cli.items():
            if where == "CLI":
                continue
            verdict = "pass" if app_wall / cli_wall >= TARGET_RATIO else "**miss**"
            lines.append(f"- {where}, {threads.split()[0]} thread(s) vs CLI, {cli_threads}: wall clock "
                         f"{app_wall / cli_wall:.0%} ({verdict}; target ≥ {TARGET_RATIO:.0%}), step time "
                         f"{app_step / cli_step:.0%}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="reverse", choices=("reverse", "copy", "sort", "toy-en-de"))
    parser.add_argument("--steps", type=int, default=400, help="per run; a few hundred, so the app run lasts seconds")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of all runs (interleaved)")
    parser.add_argument("--app-threads", type=int, nargs="+", default=[0],
                        help="ATTENTION_STUDIO_TORCH_THREADS for the app runs (0 = as the app configures itself)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    results: list[Throughput] = []
    with tempfile.TemporaryDirectory(prefix="attention-studio-bench-") as tmp:
        for _ in range(args.repeats):
            results.append(cli_run(args.task, args.steps, 0, Path(tmp)))
            for threads in args.app_threads:
                results.append(app_run(args.task, args.steps, threads, True, Path(tmp)))
                results.append(app_run(args.task, args.steps, threads, False, Path(tmp)))
            results.append(cli_run(args.task, args.steps, 1, Path(tmp)))
    print(f"task {args.task}, task defaults, {args.steps} steps, seed 0; 1-min load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after")
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"step_tokens_per_s": r.step_tokens_per_s,
                                                      "wall_tokens_per_s": r.wall_tokens_per_s} for r in results],
                                        indent=1))


if __name__ == "__main__":
    main()
