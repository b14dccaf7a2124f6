"""What a user sees, read from the page: JavaScript installed in every page, the wait conditions and the waits.

Waits look at the page, never at the clock: a rerun is over when Streamlit's script state is "notRunning", no
element is left stale from the previous run, the "Running..." widget is gone and every Vega chart is drawn; a wait
fails when the page has stopped changing without that (or after a few times its timeout), not while it still draws.
The wait conditions are JavaScript (see `charts_condition`), so the async load benchmark uses the same ones.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

EXCEPTION = '[data-testid="stException"]'

# Installed in every page before the app loads. It counts the script runs that finished (Streamlit's `script_finished`
# message, field 6 of each ForwardMsg on the app's WebSocket, any status but "finished early for a rerun"), so a wait
# can tell the rerun an action caused from the idle page before it. Not stApp's data-test-script-state turning
# "notRunning": on a loaded machine the browser may take a fast run's "running" and "finished" messages in one React
# update, the attribute never changes, and the wait missed the run (it timed out with the page long drawn). A run is
# counted two timer tasks after its message, so that React has committed what the message changed before a wait looks
# (its idle check then sees the run's page). The count is kept in the tab's sessionStorage, so a reload does not set it
# back. A run not counted yet keeps the page from being idle: a test that reads runs_finished() after a wait for
# idle, then acts and waits for the run it caused, must not read a count that the load's own run bumps a moment later
# (the wait would take that run for its action's and the test would act on a page still being redrawn: CI at stop 55
# clicked Next while the old and the new Next were both drawn). It also remembers when the user last pressed a pointer
# (the start of a latency measurement) and when the page last changed at all (a wait gives a page that is still
# changing more time).
PAGE_SETUP_JS = """
(() => {
  const kept = (() => { try { return window.sessionStorage; } catch (e) { return null; } })();
  window.__studioRuns = Number(kept && kept.getItem('studioRuns')) || 0;
  window.__studioPending = 0;  // runs whose message came but that are not counted yet (IDLE_JS waits for them)
  window.__studioPress = null;
  window.__studioChanged = 0;
  const finishedRun = (data) => {  // a ForwardMsg (protobuf) whose script_finished (field 6) is not 2
    if (!(data instanceof ArrayBuffer)) return false;
    const b = new Uint8Array(data);
    let i = 0;
    const varint = () => {
      let value = 0, scale = 1, byte;
      do { byte = b[i++]; value += (byte & 127) * scale; scale *= 128; } while (byte & 128 && i < b.length);
      return value;
    };
    while (i < b.length) {
      const tag = varint(), wire = tag % 8;
      if (wire === 0) { const value = varint(); if (tag >> 3 === 6) return value !== 2; }
      else if (wire === 2) { const length = varint(); i += length; }  // (not `i += varint()`: i is read first)
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else return false;
    }
    return false;
  };
  const counted = () => {
    window.__studioPending -= 1;
    window.__studioRuns += 1;
    if (kept) kept.setItem('studioRuns', String(window.__studioRuns));
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        if (finishedRun(event.data)) {
          window.__studioPending += 1;
          setTimeout(() => setTimeout(counted, 20), 20);
        }
      });
    }
  };
  new MutationObserver(() => { window.__studioChanged = performance.now(); })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  document.addEventListener('pointerdown', () => { window.__studioPress = performance.now(); }, true);
})();
"""

# True when the last run is over and drawn (see the module docstring).
IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning' || app.dataset.testConnectionState !== 'CONNECTED') {
    return false;
  }
  if (window.__studioPending) return false;  // a run ended but is not counted yet: runs_finished() would miss it
  if (document.querySelector('[data-stale="true"], [data-testid="stStatusWidget"], [data-testid="stSkeleton"]')) {
    return false;
  }
  return [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].every(
    (c) => c.querySelector('svg, canvas'));
}"""

# What a page shows: the Decode page's "Step t of n" heading and the text drawn in each Vega and Plotly chart. A
# Vega chart's text starts with the chart heading the page drew right above it, if any ("heading ⟫ a | b | c").
VIEW_JS = """() => {
  const heading = [...document.querySelectorAll('[data-testid="stHeading"]')]
    .map((h) => h.textContent).find((t) => /^Step \\d+ of \\d+/.test(t)) || null;
  const above = (svg) => {
    const box = svg.closest('[data-testid="stElementContainer"]');
    const before = box && box.previousElementSibling;
    const label = before && before.querySelector('.studio-chart-heading');
    return label ? label.textContent + ' ⟫ ' : '';
  };
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg')]
    .map((s) => above(s) + [...s.querySelectorAll('text')].map((t) => t.textContent).join(' | '));
  const plotly = [...document.querySelectorAll('.js-plotly-plot')].map((p) => p.textContent);
  return {heading, charts, plotly};
}"""

# performance.now() once the page is idle and shows what was asked for, else false.
_CHARTS_JS = f"""([pattern, count, heading, texts, after, exact]) => {{
  if (after !== null && window.__studioRuns <= after) return false;
  if (!({IDLE_JS})()) return false;
  const view = ({VIEW_JS})();
  if (heading && !(view.heading || '').startsWith(heading)) return false;
  if (texts.length
      && ![...view.plotly, ...view.charts].some((text) => texts.every((part) => text.includes(part)))) return false;
  if (exact && !view.charts.some((text) => new RegExp(exact).test(text))) return false;
  const re = new RegExp(pattern);
  return view.charts.filter((text) => re.test(text)).length >= count && performance.now();
}}"""



@dataclass(frozen=True)
class PageView:
    """What a page shows: its 'Step t of n' heading (Decode), the text drawn in its charts, and when (ms)."""

    heading: str | None
    charts: tuple[str, ...]
    plotly: tuple[str, ...]
    drawn_at: float | None = None  # the page's performance.now() when a wait saw it

    @property
    def step(self) -> tuple[int, int] | None:
        """(t, n) of the Decode page's 'Step t of n' heading."""
        if self.heading is None:
            return None
        t, _, n = self.heading.split(":", 1)[0].removeprefix("Step ").partition(" of ")
        return int(t), int(n)

    def charts_matching(self, pattern: str) -> int:
        """How many Vega charts draw text matching the regular expression `pattern`."""
        return sum(re.search(pattern, chart) is not None for chart in self.charts)


def charts_condition(pattern: str, count: int = 1, *, heading: str = "", texts: tuple[str, ...] = (),
                     after_runs: int | None = None, exact: str = "") -> tuple[str, list]:
    """(JavaScript, argument) for page.wait_for_function: idle, the step heading starts with `heading`, one chart
    (Vega or Plotly) contains every string of `texts`, `count` Vega charts match `pattern`, and (given `after_runs`) a
    script run finished since runs_finished() returned it, and (given `exact`) one Vega chart's text matches that
    regular expression. The function's value is performance.now()."""
    return _CHARTS_JS, [pattern, count, heading, list(texts), after_runs, exact]


def decode_step_condition(step: int, texts: tuple[str, ...] = ()) -> tuple[str, list]:
    """charts_condition for the Decode page at step `step` (1-based): the heading and the three step charts say so,
    and the prefix chart draws the `step` decoder inputs of that step (its data, not only its heading, changed)."""
    prefix = rf"^Decoder self-attention of step {step} over the prefix ⟫ (?:[^|]* \| ){{{step - 1}}}[^|]*$"
    return charts_condition(rf"\bstep {step}\b", 3, heading=f"Step {step} of", texts=texts, exact=prefix)


def view_from(raw: dict, drawn_at: float | None = None) -> PageView:
    """A PageView from what VIEW_JS returned."""
    return PageView(raw["heading"], tuple(raw["charts"]), tuple(raw["plotly"]), drawn_at)


POLLING: str | int = "raf"  # how often a wait looks: every frame (a bench's drawn_at), or every N ms (tests/e2e: 50)
STALL_LIMIT = 3  # a page that is still changing gets up to this many times a wait's timeout

# Why a wait has not ended: the parts of IDLE_JS, the runs counted, and how long the page has not changed at all.
WAITING_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  const stale = [...document.querySelectorAll('[data-stale="true"]')];
  return {url: location.href, runs: window.__studioRuns, pending: window.__studioPending,
          script: app && app.dataset.testScriptState,
          connection: app && app.dataset.testConnectionState,
          stale: stale.slice(0, 5).map((e) => e.dataset.testid || e.className), stale_count: stale.length,
          running: !!document.querySelector('[data-testid="stStatusWidget"]'),
          skeletons: document.querySelectorAll('[data-testid="stSkeleton"]').length,
          charts: charts.length, undrawn: charts.filter((c) => !c.querySelector('svg, canvas')).length,
          quiet_ms: Math.round(performance.now() - (window.__studioChanged || 0))};
}"""


def _wait_function(page: Any, js: str, arg: Any, timeout_ms: float) -> Any:
    """page.wait_for_function(js, arg), polled as POLLING says. It fails when the page has not changed in the last
    `timeout_ms` (stuck: a stale element left, a chart never drawn, no run ending), or after STALL_LIMIT times
    `timeout_ms`; a page that is still changing (a loaded machine drawing slowly) gets the next `timeout_ms`. The
    error says what the page showed (WAITING_JS)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(STALL_LIMIT):
        try:
            return page.wait_for_function(js, arg=arg, timeout=timeout_ms, polling=POLLING)
        except PlaywrightTimeout as timeout:
            waiting = page.evaluate(WAITING_JS)
            if waiting["quiet_ms"] >= timeout_ms or attempt == STALL_LIMIT - 1:
                raise PlaywrightTimeout(f"{timeout.message}\nafter {attempt + 1} x {timeout_ms:,.0f} ms the page "
                                        f"showed {waiting}") from timeout
    raise AssertionError("unreachable")


def wait_for(page: Any, condition: tuple[str, list], timeout_ms: float = 30_000) -> PageView:
    """Wait until `condition` (from charts_condition) holds; the view carries the time it first held."""
    drawn_at = _wait_function(page, condition[0], condition[1], timeout_ms).json_value()
    return view_from(page.evaluate(VIEW_JS), drawn_at)


def wait_charts(page: Any, pattern: str, count: int = 1, heading: str = "", timeout_ms: float = 30_000) -> PageView:
    """Wait until the page is idle, its step heading starts with `heading` and `count` Vega charts match `pattern`."""
    return wait_for(page, charts_condition(pattern, count, heading=heading), timeout_ms)


def wait_decode_step(page: Any, step: int, timeout_ms: float = 30_000) -> PageView:
    """Wait until the Decode page shows step `step` (1-based) in its heading and in at least three step charts."""
    return wait_for(page, decode_step_condition(step), timeout_ms)


def wait_idle(page: Any, timeout_ms: float = 30_000) -> None:
    """Wait until the current run has finished and its charts are drawn."""
    _wait_function(page, IDLE_JS, None, timeout_ms)


def runs_finished(page: Any) -> int:
    """How many script runs this page (this tab, across reloads) has seen finish."""
    return int(page.evaluate("() => window.__studioRuns"))


def wait_rerun(page: Any, after: int, timeout_ms: float = 30_000) -> None:
    """Wait for a script run that finished after runs_finished() returned `after`, and for the page to be idle."""
    wait_for(page, charts_condition("", 0, after_runs=after), timeout_ms)


def last_press(page: Any) -> float:
    """performance.now() of the last pointer press on the page."""
    return float(page.evaluate("() => window.__studioPress"))


def page_errors(page: Any) -> list[str]:
    """What a user would see of a crash: Streamlit exception boxes and any 'Traceback' text."""
    errors = [e.inner_text()[:500] for e in page.locator(EXCEPTION).all()]
    if "Traceback" in page.locator("body").inner_text():
        errors.append("'Traceback' appears on the page")
    return errors
