"""Poll the room under load: a speaker (headless Chromium, presenter mode at 1280x720) poses "Poll the room" on Decode,
`--sessions` audience sessions (Locust users speaking Streamlit's websocket, `bench.common.audience_locust --vote`) open
the poll's link, then all vote within `--window` seconds, each voting a second time right after (refused); meanwhile
the speaker presses Next.

    PYTHONPATH=. .venv/bin/python -m bench.load.poll [--sessions 100] [--window 10] [--json PATH]

Measured: votes counted (the speaker's tally at the end, against the votes accepted; each second vote must be
refused), a vote's time from the moment it is sent to the moment the speaker's screen shows a tally that includes it
(wall clock on one machine: the k-th vote sent against the first time the tally reads k or more), p50 / p95 / max, and
the speaker's Next while the room votes (press to the next step drawn, as bench.app.speed). The load generator runs at
a lower priority (`nice -n 10`) on the same machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from bench.load.audience import percentile
from studio_browser import (
    PAGE_SETUP_JS,
    last_press,
    launch_chromium,
    running_app,
    shipped_checkpoints,
    wait_decode_step,
    wait_idle,
)

ROOT = Path(__file__).resolve().parents[2]
TEXT = "A man plays the guitar on a stage."
# every change of the speaker's tally, with the wall-clock time it was drawn
TALLY_JS = """
window.__tally = [];
new MutationObserver(() => {
  const box = document.querySelector('.st-key-studio_poll_count');
  const n = box ? parseInt(box.innerText, 10) : NaN;
  const seen = window.__tally;
  if (!Number.isNaN(n) && (seen.length === 0 || seen[seen.length - 1][1] !== n)) seen.push([Date.now() / 1000, n]);
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def _speaker(browser, url: str):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_init_script(PAGE_SETUP_JS)
    context.add_init_script(TALLY_JS)
    page = context.new_page()
    page.set_default_timeout(180_000)
    page.goto(f"{url}/decode?{urlencode({'text': TEXT, 'present': '1'})}")
    page.locator(".st-key-decode_poll_open button").first.wait_for()
    wait_idle(page, 180_000)
    page.locator(".st-key-decode_poll_open button").first.click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('poll')")
    page.locator(".st-key-studio_poll_count").wait_for()
    return page


def measure(url: str, sessions: int, window: float, spawn_seconds: float) -> dict:
    """One poll, `sessions` voters within `window` seconds; the figures."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        browser = launch_chromium(pw)
        speaker = _speaker(browser, url)
        params = {k: v[-1] for k, v in parse_qs(urlsplit(speaker.url).query).items() if k != "present"}
        link = f"/decode?{urlencode(params)}"
        ready, go, out = Path(tmp) / "ready", Path(tmp) / "go", Path(tmp) / "votes.json"
        load = subprocess.Popen(["nice", "-n", "10", sys.executable, "-m", "bench.common.audience_locust",
                                 "--host", url, "--link", link, "--users", str(sessions), "--spawn-seconds",
                                 str(spawn_seconds), "--vote", str(ready), str(go), "--hold", "3", "--out", str(out)],
                                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        opened = time.time()
        while load.poll() is None and (not ready.exists() or len(ready.read_text().split()) < sessions):
            time.sleep(0.2)
        loaded_s = time.time() - opened
        at = time.time() + 1.0
        go.write_text(f"{at} {window}")
        time.sleep(max(0.0, at + window / 2 - time.time()))  # the speaker presses Next while the room votes
        speaker.locator(".st-key-decode_next button").first.click()
        drawn = wait_decode_step(speaker, 2, 60_000)
        next_s = (drawn.drawn_at - last_press(speaker)) / 1000 if drawn.drawn_at else None
        load.wait(timeout=600)
        time.sleep(2.5)  # the tally's last redraw (every second)
        tally = speaker.evaluate("() => window.__tally")
        browser.close()
        results = json.loads(out.read_text())["results"]
    sent = sorted(r["vote_sent"] for r in results if "vote_sent" in r and not r.get("vote_refused"))
    latencies = []
    for k, t in enumerate(sent, start=1):
        shown = next((when for when, n in tally if n >= k), None)
        if shown is not None:
            latencies.append(max(0.0, shown - t))
    window_s = (max(sent) - min(sent)) if sent else None
    return {"sessions": sessions, "opened_s": round(loaded_s, 1),
            "votes_sent": sum("vote_sent" in r for r in results), "votes_accepted": len(sent),
            "second_votes_refused": sum(bool(r.get("again_refused")) for r in results),
            "tally_at_end": tally[-1][1] if tally else None, "votes_within_s": round(window_s, 2) if sent else None,
            "vote_to_tally_p50_s": round(percentile(latencies, 0.5), 2) if latencies else None,
            "vote_to_tally_p95_s": round(percentile(latencies, 0.95), 2) if latencies else None,
            "vote_to_tally_max_s": round(max(latencies), 2) if latencies else None,
            "votes_never_shown": len(sent) - len(latencies), "speaker_next_s": round(next_s, 2) if next_s else None,
            "errors": sorted({r["error"] for r in results if "error" in r})[:5]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--window", type=float, default=10.0, help="seconds within which the room votes")
    parser.add_argument("--spawn-seconds", type=float, default=20.0, help="seconds over which the sessions open")
    parser.add_argument("--checkpoints", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as runs, running_app(args.checkpoints or shipped_checkpoints(), Path(runs),
                                                           start_timeout=300) as server:
        figures = measure(server.url, args.sessions, args.window, args.spawn_seconds)
        figures["server_tracebacks"] = server.log_text().count("Traceback")
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
