"""An audience opening one link: 1, 30 and 100 sessions from Locust users that speak Streamlit's websocket messages
(`bench.common.audience_locust`), and 1 and 8 headless Chromium sessions, each part on a fresh server with the
shipped default model (Multi30k), every session from "the room" (ATTENTION_STUDIO_AUDIENCE=all).

    PYTHONPATH=. .venv/bin/python -m bench.load.audience [--sessions 1 30 100] [--browsers 1 8] [--json PATH]
        [--different 8 --models DIR]

`--different 8`: on a server that also lists a random BART of bart-large's shape (`bench.common.shapes`'s, built
into `--models` once), one session loads it, one more opens another caption (one decode: the baseline), then eight
sessions open eight other captions within 0.5 s: their decodes are stepped as one batch by the server's queue.

A part's sessions all open the same Decode link within `--spawn-seconds` (5 s). A Locust session's time runs from
its first request to the first ForwardMsg of its run that carries a chart; a browser session's from navigation
start to the first Vega chart drawn on its page. The load generator runs at a lower priority (`nice -n 10`) on the
same machine. The server's CPU time per session (its process's user + system time over the part, divided by the
sessions) depends little on how busy the machine is. The server's memory is the resident set of its process,
sampled every 0.2 s: at rest before the sessions, and its peak while they open (a part's "over one session" is its
peak less the 1-session part's peak).
A session is dropped when it gets no chart: an error, a closed connection, an exception on its page, a timeout; the
server's log is searched for tracebacks too.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

from bench.common.measures import cpu_seconds
from studio_browser import PAGE_SETUP_JS, VIEWPORT, launch_chromium, running_app, shipped_checkpoints

ROOT = Path(__file__).resolve().parents[2]
TEXT = "Two young children in blue shirts are playing soccer on a green field."
LINK = "/decode?" + urllib.parse.urlencode({"text": TEXT})
FIRST_CHART_JS = """() => {
  const drawn = document.querySelector('[data-testid="stVegaLiteChart"] svg, [data-testid="stVegaLiteChart"] canvas');
  return drawn ? performance.now() : false;
}"""
BROWSER_TIMEOUT_MS = 300_000


def rss_gb(pid: int) -> float:
    """The resident set of process `pid` (GB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2**20
    return 0.0


class MemorySampler:
    """The peak resident set of a process while inside (sampled every `every` seconds)."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        self.pid, self.every, self.peak = pid, every, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, rss_gb(self.pid))
            except OSError:
                return
            self._stop.wait(self.every)

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def summary(seconds: list[float], sessions: int) -> dict:
    return {"sessions": sessions, "served": len(seconds), "dropped": sessions - len(seconds),
            "p50_s": round(statistics.median(seconds), 2) if seconds else None,
            "p95_s": round(percentile(seconds, 0.95), 2) if seconds else None,
            "max_s": round(max(seconds), 2) if seconds else None}


def locust_part(url: str, pid: int, sessions: int, spawn_seconds: float, links: list[str] | None = None,
                name: str = "locust") -> dict:
    """`sessions` Locust users open the link (user i the i-th of `links`) within `spawn_seconds`; their figures and
    the server's memory."""
    links = links or [LINK]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "locust.json"
        rest, cpu = rss_gb(pid), cpu_seconds(pid)
        load = os.getloadavg()[0]
        with MemorySampler(pid) as memory:
            subprocess.run(["nice", "-n", "10", sys.executable, "-m", "bench.common.audience_locust", "--host", url,
                            *[arg for link in links for arg in ("--link", link)], "--users", str(sessions),
                            "--spawn-seconds", str(spawn_seconds),
                            "--out", str(out)], cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        cpu = cpu_seconds(pid) - cpu
        figures = json.loads(out.read_text())
    results = figures["results"]
    served = [r["first_chart_s"] for r in results if "first_chart_s" in r and not r.get("exceptions")]
    finished = [r["run_finished_s"] for r in results if "run_finished_s" in r]
    errors = sorted({r.get("error") or "; ".join(r.get("exceptions", [])) for r in results
                     if "error" in r or r.get("exceptions")})
    return {"part": f"{name} {sessions}", **summary(served, sessions),
            "run_finished_p95_s": round(percentile(finished, 0.95), 2) if finished else None,
            "server_cpu_per_session_s": round(cpu / sessions, 3), "rss_at_rest_gb": round(rest, 2),
            "rss_peak_gb": round(memory.peak, 2), "load_before": round(load, 1),
            "load_after": round(os.getloadavg()[0], 1), "errors": errors[:5]}


async def _browser_session(browser, url: str, began: float) -> float:
    context = await browser.new_context(viewport=VIEWPORT)
    await context.add_init_script(PAGE_SETUP_JS)
    page = await context.new_page()
    await page.goto(url + LINK)
    handle = await page.wait_for_function(FIRST_CHART_JS, timeout=BROWSER_TIMEOUT_MS, polling="raf")
    drawn = float(await handle.json_value())  # ms from this page's navigation start
    start = await page.evaluate("() => performance.timeOrigin")
    return (start + drawn) / 1000 - began


async def _browsers(url: str, sessions: int, spawn_seconds: float) -> tuple[list[float], list[str]]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await launch_chromium(pw)
        try:
            async def one(i: int) -> float:
                await asyncio.sleep(i * spawn_seconds / sessions)
                began = time.time()
                return await _browser_session(browser, url, began)

            done = await asyncio.gather(*(one(i) for i in range(sessions)), return_exceptions=True)
        finally:
            await browser.close()
    return ([d for d in done if isinstance(d, float)],
            [f"{type(d).__name__}: {d}"[:300] for d in done if not isinstance(d, float)])


def browser_part(url: str, pid: int, sessions: int, spawn_seconds: float) -> dict:
    rest, load, cpu = rss_gb(pid), os.getloadavg()[0], cpu_seconds(pid)
    with MemorySampler(pid) as memory:
        seconds, errors = asyncio.run(_browsers(url, sessions, spawn_seconds))
    return {"part": f"chromium {sessions}", **summary(seconds, sessions),
            "server_cpu_per_session_s": round((cpu_seconds(pid) - cpu) / sessions, 3), "rss_at_rest_gb": round(rest, 2),
            "rss_peak_gb": round(memory.peak, 2), "load_before": round(load, 1),
            "load_after": round(os.getloadavg()[0], 1), "errors": errors[:5]}


def different_part(url: str, pid: int, sessions: int, spawn_seconds: float) -> list[dict]:
    """Different captions on the bart-large-shaped model: one session loads it, one more opens another caption (the
    baseline: one decode), then `sessions` sessions open `sessions` other captions at once (`spawn_seconds`)."""
    from bench.common.shapes import BART, CAPTIONS

    def link(i: int) -> str:
        return "/decode?" + urllib.parse.urlencode({"model": f"hf:{BART}", "text": CAPTIONS[i]})

    rows = [locust_part(url, pid, 1, 1.0, [link(0)], "bart-large shape, model load +"),
            locust_part(url, pid, 1, 1.0, [link(1)], "bart-large shape, another caption")]
    rows.append(locust_part(url, pid, sessions, spawn_seconds, [link(2 + i) for i in range(sessions)],
                            "bart-large shape, different captions at once"))
    one = rows[1]["max_s"]
    rows[2]["over_one_session"] = round(rows[2]["max_s"] / one, 2) if one else None
    return rows


def on_fresh_server(checkpoints: Path, part, *args, models: Path | None = None):
    extra = {"ATTENTION_STUDIO_AUDIENCE": "all", **({"ATTENTION_STUDIO_HF_MODELS": str(models)} if models else {})}
    with tempfile.TemporaryDirectory() as runs, running_app(checkpoints, Path(runs), extra_env=extra,
                                                           start_timeout=300) as server:
        time.sleep(2.0)  # let the warm start's last imports settle before measuring memory at rest
        found = part(server.url, server.pid, *args)
        tracebacks = server.log_text().count("Traceback")
        if isinstance(found, list):
            return [{**row, "server_tracebacks": tracebacks} for row in found]
        return {**found, "server_tracebacks": tracebacks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="*", default=[1, 30, 100])
    parser.add_argument("--browsers", type=int, nargs="*", default=[1, 8], help="Chromium sessions per part")
    parser.add_argument("--spawn-seconds", type=float, default=5.0)
    parser.add_argument("--different", type=int, default=0,
                        help="sessions opening different captions on a bart-large-shaped model at once (0: none)")
    parser.add_argument("--models", type=Path, default=None,
                        help="where the bart-large-shaped model is built and kept (with --different)")
    parser.add_argument("--checkpoints", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    checkpoints = args.checkpoints or shipped_checkpoints()
    rows = []
    for n in args.sessions:
        rows.append(on_fresh_server(checkpoints, locust_part, n, args.spawn_seconds))
        print(json.dumps(rows[-1]), flush=True)
    for n in args.browsers:
        rows.append(on_fresh_server(checkpoints, browser_part, n, args.spawn_seconds))
        print(json.dumps(rows[-1]), flush=True)
    if args.different:
        from bench.common.shapes import BART, save_model
        models = args.models or Path(tempfile.mkdtemp(prefix="attention-studio-models-"))
        if not (models / BART / "config.json").is_file():
            save_model(BART, models / BART)
        for row in on_fresh_server(checkpoints, different_part, args.different, 0.5, models=models):
            rows.append(row)
            print(json.dumps(row), flush=True)
    one = next((r["rss_peak_gb"] for r in rows if r["part"] == "locust 1"), None)
    if one is not None:
        for r in rows:
            r["rss_over_one_session_gb"] = round(r["rss_peak_gb"] - one, 2)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print("| part | sessions | served | dropped | first chart p50 s | p95 s | max s | server CPU s / session | "
          "server RSS peak GB | over one session GB | load before → after |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    for r in rows:
        print(f"| {r['part']} | {r['sessions']} | {r['served']} | {r['dropped']} | {r['p50_s']} | {r['p95_s']} | "
              f"{r['max_s']} | {r['server_cpu_per_session_s']} | {r['rss_peak_gb']} | "
              f"{r.get('rss_over_one_session_gb')} | "
              f"{r['load_before']} → {r['load_after']} |")


if __name__ == "__main__":
    main()
