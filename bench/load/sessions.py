"""Eight people at once: concurrent browser sessions stepping through decoding on the default model.

    PYTHONPATH=. .venv/bin/python -m bench.load.sessions [--sessions 1 8] [--clicks 15] [--checkpoints DIR]
        [--json PATH]

One headless Chromium, one browser context (so one Streamlit session) per simulated person, all on one server.
Each session opens the Decode page and clicks Next through the output (Prev back at its end) with no pause.
A click's latency runs from the pointer press to the first frame at which the page shows the new step in its
heading, its three step charts and its top-k bars, and the run is over (the same condition as bench.app.speed).
Errors: Streamlit exception boxes, "Traceback" on a page or in the server log, and clicks that time out.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common.measures import Measure, browser_cpu_seconds, cpu_seconds, table
from bench.common.pages import TOP_K, default_model, topk_texts
from studio_browser import (
    EXCEPTION,
    PAGE_SETUP_JS,
    VIEWPORT,
    charts_condition,
    decode_step_condition,
    launch_chromium,
    running_app,
    shipped_checkpoints,
)
from transformer.adapters import adapter_for
from transformer.decode import DecodeResult, greedy_decode
from transformer.store import load_checkpoint

CLICK_TIMEOUT_MS = 60_000


async def _wait(page: Any, condition: tuple[str, list], timeout_ms: float = CLICK_TIMEOUT_MS) -> float:
    handle = await page.wait_for_function(condition[0], arg=condition[1], timeout=timeout_ms, polling="raf")
    return float(await handle.json_value())


async def _errors(page: Any) -> list[str]:
    found = [await e.inner_text() for e in await page.locator(EXCEPTION).all()]
    if "Traceback" in await page.locator("body").inner_text():
        found.append("'Traceback' appears on the page")
    return found


async def _open_decode(browser: Any, url: str) -> Any:
    context = await browser.new_context(viewport=VIEWPORT)
    await context.add_init_script(PAGE_SETUP_JS)
    page = await context.new_page()
    await page.goto(f"{url}/decode")
    await _wait(page, charts_condition("", 1, heading="Step 1 of"), 120_000)
    return page


async def session(browser: Any, url: str, expected: DecodeResult, clicks: int, start: asyncio.Barrier,
                  latencies: dict[str, list[float]], errors: list[str], name: str) -> None:
    """One person: open Decode, wait for everyone, click Next / Prev `clicks` times, record each latency (ms)."""
    try:
        page = await _open_decode(browser, url)
    except Exception as exc:  # a page that does not open is an error of the run
        errors.append(f"{name}: the Decode page did not open ({type(exc).__name__})")
        page = None
    await start.wait()  # all sessions click at once, after every one has its page (or failed to get it)
    if page is None:
        return
    n, t, forward = len(expected.steps), 1, True
    for _ in range(clicks):
        forward = t < n if forward else t == 1
        t += 1 if forward else -1
        button = "next" if forward else "prev"
        await page.locator(f".st-key-decode_{button} button").click()
        try:
            drawn = await _wait(page, decode_step_condition(t, texts=topk_texts(expected, t)))
        except Exception as exc:  # a timed-out click is an error of the run, not of the benchmark
            errors.append(f"{name}: step {t} not shown ({type(exc).__name__})")
            return
        latencies[button].append(drawn - await page.evaluate("() => window.__studioPress"))
    errors += [f"{name}: {e[:300]}" for e in await _errors(page)]


def _cpu_now(server_pid: int) -> tuple[float, float, float]:
    return time.perf_counter(), cpu_seconds(server_pid), browser_cpu_seconds(server_pid)


async def run_sessions(url: str, server_pid: int, expected: DecodeResult, sessions: int,
                       clicks: int) -> tuple[dict[str, list[float]], list[str], dict[str, float]]:
    """All sessions at once in one Chromium: the latencies of Next and of Prev clicks, every error, and the CPU
    share (cores) the server and the browser used while the sessions clicked."""
    from playwright.async_api import async_playwright

    latencies: dict[str, list[float]] = {"next": [], "prev": []}
    errors: list[str] = []
    start = asyncio.Barrier(sessions + 1)

    async def clicking_begins() -> tuple[float, float, float]:
        await start.wait()
        return _cpu_now(server_pid)

    async with async_playwright() as pw:
        browser = await launch_chromium(pw)
        try:
            began, *_ = await asyncio.gather(clicking_begins(), *(
                session(browser, url, expected, clicks, start, latencies, errors, f"session {i + 1}")
                for i in range(sessions)))
            ended = _cpu_now(server_pid)
        finally:
            await browser.close()
    seconds = ended[0] - began[0]
    return latencies, errors, {"server": (ended[1] - began[1]) / seconds, "browser": (ended[2] - began[2]) / seconds}


def run(checkpoints: Path, sessions: int = 8, clicks: int = 15) -> tuple[list[Measure], dict]:
    """The load benchmark on the default model of `checkpoints`."""
    default = default_model(checkpoints)
    ckpt = load_checkpoint(checkpoints / default, load_optimizer=False)
    with tempfile.TemporaryDirectory(prefix="attention-studio-bench-") as runs:
        with running_app(checkpoints, Path(runs), default=default) as server:
            text = asyncio.run(_default_text(server.url))
            adapter = adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer)
            expected = greedy_decode(adapter, text, top_k=TOP_K)
            latencies, errors, cpu = asyncio.run(run_sessions(server.url, server.pid, expected, sessions, clicks))
            if "Traceback" in server.log_text():
                errors.append("server log: Traceback")
    if not latencies["next"]:
        raise RuntimeError("no click was answered: " + "; ".join(errors))
    details = {"model": default, "checkpoints": str(checkpoints), "input": text,
               "output_steps": len(expected.steps), "sessions": sessions, "clicks_per_session": clicks,
               "cpu_cores_used": {who: round(share, 2) for who, share in cpu.items()},
               "errors": errors}
    measures = [Measure(f"{button.title()} click → step charts updated, {sessions} concurrent session(s)",
                        tuple(latencies[button])) for button in ("next", "prev") if latencies[button]]
    return measures, details


async def _default_text(url: str) -> str:
    """The input the Decode page opens with (one warm-up session; it also warms the server)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await launch_chromium(pw)
        try:
            page = await _open_decode(browser, url)
            return await page.locator(".st-key-decode_text input").input_value()
        finally:
            await browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=Path, help="checkpoint root (default: checkpoints/)")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 8],
                        help="concurrent sessions, one server per number (1 is the baseline)")
    parser.add_argument("--clicks", type=int, default=15, help="timed clicks per session")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    checkpoints = args.checkpoints or shipped_checkpoints()
    all_measures, all_details = [], []
    for sessions in args.sessions:
        load = os.getloadavg()[0]
        measures, details = run(checkpoints, sessions, args.clicks)
        details["load_average_1min"] = [round(load, 1), round(os.getloadavg()[0], 1)]
        all_measures += measures
        all_details.append(details)
        print(f"model {details['model']}; input {details['input']!r} ({details['output_steps']} output steps); "
              f"{sessions} session(s) × {args.clicks} clicks; 1-min load average {load:.1f} before, "
              f"{os.getloadavg()[0]:.1f} after; CPU while clicking: server {details['cpu_cores_used']['server']:.2f}, "
              f"browser {details['cpu_cores_used']['browser']:.2f} cores; "
              f"errors: {len(details['errors'])}", *details["errors"], sep="\n  ")
    print(table(all_measures))
    if args.json:
        args.json.write_text(json.dumps({"details": all_details, "measures": [m.to_dict() for m in all_measures]},
                                        indent=1))


if __name__ == "__main__":
    main()
