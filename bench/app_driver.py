"""Drive the real app: a Streamlit server subprocess, headless Chromium, and waits for what a user sees.

Shared by the browser end-to-end test (tests/test_e2e_browser.py) and the app benchmarks (bench/app_*.py).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1000}
DEV_CHECKPOINTS = Path("/tmp/dev_ckpt")
EXCEPTION = '[data-testid="stException"]'
STATUS_WIDGET = '[data-testid="stStatusWidget"]'
VEGA = ".vega-embed svg, .vega-embed canvas"
PLOTLY = ".js-plotly-plot .main-svg"

# True once the last rerun is done: script finished, no element left over from the previous run (Streamlit marks
# those data-stale until the run ends), the "Running..." widget gone, every Vega chart drawn.
_IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning' || app.dataset.testConnectionState !== 'CONNECTED') {
    return false;
  }
  if (document.querySelector('[data-stale="true"], [data-testid="stStatusWidget"], [data-testid="stSkeleton"]')) {
    return false;
  }
  return [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].every(
    (c) => c.querySelector('svg, canvas'));
}"""

# The Decode page as the user sees it: the "Step t of n" heading and the titles drawn inside the Vega charts.
_DECODE_VIEW_JS = """() => {
  const heading = [...document.querySelectorAll('[data-testid="stHeading"]')]
    .map((h) => h.textContent).find((t) => /^Step \\d+ of \\d+/.test(t)) || null;
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg')]
    .map((s) => [...s.querySelectorAll('text')].map((t) => t.textContent).join(' | '));
  const plotly = [...document.querySelectorAll('.js-plotly-plot')].map((p) => p.textContent);
  return {heading, charts, plotly};
}"""


class AppStartError(RuntimeError):
    """The Streamlit server did not come up (its log tail is in the message)."""


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def shipped_or_dev_checkpoints() -> Path:
    """checkpoints/ when it holds checkpoints, else the developers' /tmp/dev_ckpt (until demos ship)."""
    shipped = ROOT / "checkpoints"
    if any((p / "config.json").is_file() for p in shipped.iterdir() if p.is_dir()):
        return shipped
    if DEV_CHECKPOINTS.is_dir():
        return DEV_CHECKPOINTS
    raise FileNotFoundError("no checkpoints: run `make checkpoints` (or pass --checkpoints DIR)")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


@contextmanager
def running_app(checkpoints: Path, runs: Path, *, default: str | None = None, extra_env: dict[str, str] | None = None,
                start_timeout: float = 60.0) -> Iterator[str]:
    """`streamlit run app.py` on a free local port; yields its URL once /_stcore/health answers; always stops it."""
    port = free_port()
    env = {**os.environ, "ATTENTION_STUDIO_CHECKPOINTS": str(checkpoints), "ATTENTION_STUDIO_RUNS": str(runs),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           **(extra_env or {})}
    env.pop("ATTENTION_STUDIO_DEFAULT", None)
    if default is not None:
        env["ATTENTION_STUDIO_DEFAULT"] = default
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
               str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + start_timeout
            while not _healthy(url):
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-3000:]
                    raise AppStartError(f"the app did not start on {url} (exit {server.poll()}):\n{tail}")
                time.sleep(0.1)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, headless (Playwright cannot download its own browsers here)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def wait_idle(page: Any, timeout_ms: float = 30_000) -> None:
    """Wait until the current rerun has finished and its charts are drawn."""
    page.wait_for_function(_IDLE_JS, timeout=timeout_ms, polling="raf")


def page_errors(page: Any) -> list[str]:
    """What a user would see of a crash: Streamlit exception boxes and any 'Traceback' text."""
    errors = [e.inner_text()[:500] for e in page.locator(EXCEPTION).all()]
    if "Traceback" in page.locator("body").inner_text():
        errors.append("'Traceback' appears on the page")
    return errors


def open_page(page: Any, url: str, title: str, timeout_ms: float = 60_000) -> None:
    """Open a page through the sidebar navigation and wait for its run to finish."""
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title, exact=True).click()
    page.wait_for_url(f"{url}/{title.lower()}", timeout=timeout_ms)
    wait_idle(page, timeout_ms)


def choose(page: Any, key: str, option: str, timeout_ms: float = 10_000) -> None:
    """Pick `option` in the selectbox with widget key `key` (the rerun it causes is not awaited)."""
    page.locator(f".st-key-{key} [data-baseweb='select']").click()
    page.get_by_role("option", name=option, exact=True).click(timeout=timeout_ms)


@dataclass(frozen=True)
class DecodeView:
    """What the Decode page shows: the step heading and the text drawn in its charts."""

    heading: str | None
    charts: tuple[str, ...]
    plotly: tuple[str, ...]

    @property
    def step(self) -> tuple[int, int] | None:
        """(t, n) of the 'Step t of n' heading."""
        if self.heading is None:
            return None
        t, _, n = self.heading.split(":", 1)[0].removeprefix("Step ").partition(" of ")
        return int(t), int(n)

    def charts_showing(self, needle: str) -> int:
        """How many Vega charts draw `needle` (e.g. 'step 3 ·')."""
        return sum(needle in chart for chart in self.charts)


def decode_view(page: Any) -> DecodeView:
    """Read the Decode page as rendered."""
    raw = page.evaluate(_DECODE_VIEW_JS)
    return DecodeView(raw["heading"], tuple(raw["charts"]), tuple(raw["plotly"]))


def wait_decode_step(page: Any, step: int, timeout_ms: float = 30_000, charts: int = 3) -> DecodeView:
    """Wait until the page is idle, its heading says 'Step `step` of' and `charts` Vega charts are titled with it."""
    page.wait_for_function(
        f"""([step, charts]) => ({_IDLE_JS})() && (({_DECODE_VIEW_JS})().heading || '').startsWith(`Step ${{step}} of`)
          && [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg')].filter(
               (s) => new RegExp(`step ${{step}}\\\\b`).test(s.textContent)).length >= charts""",
        arg=[step, charts], timeout=timeout_ms, polling="raf")
    return decode_view(page)
