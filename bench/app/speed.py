"""How fast the app feels in a real browser: first page, a Next click, a layer/head switch (headless Chromium).

    PYTHONPATH=. .venv/bin/python -m bench.app.speed [--checkpoints DIR] [--clicks 20] [--json PATH]

Every latency is measured inside the page: from the pointer press to the first animation frame at which the
page shows the new state (heading, every step chart titled with the new step, the top-k bars of that step),
the script run is over, no element is stale and the "Running..." widget is gone. The first page is timed from
navigation start to the first chart drawn on an idle page. The server-side share of a Next click is timed
separately with Streamlit's AppTest (the same page script, no browser, no websocket).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common.measures import Measure, browser_cpu_seconds, cpu_seconds, table
from bench.common.pages import TOP_K, default_model, first_page_ms, topk_texts
from studio_browser import (
    IDLE_JS,
    VIEW_JS,
    charts_condition,
    decode_step_condition,
    last_press,
    launch_chromium,
    new_page,
    open_page,
    open_select,
    page_errors,
    pick_option,
    running_app,
    shipped_checkpoints,
    wait_for,
)
from transformer.adapters import adapter_for
from transformer.decode import DecodeResult, greedy_decode
from transformer.store import load_checkpoint

LONG = True  # cold and warm servers, 20 clicks in Chromium

FIRST_PAGE_MS = 3000
CLICK_MS = 300


# Milliseconds from the last pointer press to: the step heading showing step t ("heading"), the three step charts
# and the top-k bars of step t drawn ("charts"), and all of that on an idle page ("done", the measured latency).
_STEP_MARKS_JS = f"""([step, pattern, texts, timeoutMs]) => new Promise((resolve) => {{
  const start = window.__studioPress, marks = {{}}, re = new RegExp(pattern);
  const idle = {IDLE_JS}, view = {VIEW_JS};
  function tick() {{
    const now = performance.now(), shown = view();
    if (marks.heading === undefined && (shown.heading || '').startsWith(`Step ${{step}} of`)) {{
      marks.heading = now - start;
    }}
    if (marks.charts === undefined && shown.charts.filter((text) => re.test(text)).length >= 3
        && shown.charts.some((text) => texts.every((part) => text.includes(part)))) marks.charts = now - start;
    if (marks.heading !== undefined && marks.charts !== undefined && idle()) {{
      marks.done = now - start;
      resolve(marks);
    }} else if (now - start > timeoutMs) {{
      resolve(null);
    }} else {{
      requestAnimationFrame(tick);
    }}
  }}
  tick();
}})"""


def _step_to(page: Any, button: str, t: int, expected: DecodeResult) -> dict[str, float]:
    page.locator(f".st-key-decode_{button} button").click()
    marks = page.evaluate(_STEP_MARKS_JS, [t, rf"\bstep {t}\b", list(topk_texts(expected, t)), 30_000])
    if marks is None:
        raise TimeoutError(f"{button} did not show step {t} within 30 s")
    return marks


def step_clicks(page: Any, expected: DecodeResult, clicks: int) -> tuple[list[dict], list[dict]]:
    """Next through the output (Prev back to step 1 at its end) until `clicks` Next clicks were timed."""
    n = len(expected.steps)
    if n < 2:
        raise RuntimeError(f"the output of {expected.source_text!r} has a single step: nothing to click through")
    nexts: list[dict] = []
    prevs: list[dict] = []
    t = 1
    while len(nexts) < clicks:
        while t < n and len(nexts) < clicks:
            t += 1
            nexts.append(_step_to(page, "next", t, expected))
        while t > 1 and len(nexts) < clicks:
            t -= 1
            prevs.append(_step_to(page, "prev", t, expected))
    return nexts, prevs


def switches(page: Any, n_layers: int, n_heads: int, count: int) -> list[float]:
    """Alternate layer and head changes on the Decode page; each timed from the option's press."""
    heads = [*(f"Head {h + 1}" for h in range(n_heads)), "Mean of heads"]
    layer, head = n_layers, len(heads) - 1  # the page opens on the last layer and the mean of heads
    samples = []
    for i in range(count):
        if i % 2 == 0 and n_layers > 1:
            layer = layer % n_layers + 1
            key, option, pattern = "decode_layer", f"Layer {layer}", rf"· layer {layer} ·"
        else:
            head = (head + 1) % len(heads)
            key, option = "decode_head", heads[head]
            pattern = "· mean of heads" if option == "Mean of heads" else rf"· head {head + 1}\b"
        open_select(page, key)
        pick_option(page, option)
        view = wait_for(page, charts_condition(pattern, 2))
        samples.append(view.drawn_at - last_press(page))
    return samples


def server_side_next_ms(checkpoints: Path, runs: Path, default: str, clicks: int) -> list[float]:
    """The Decode page script rerun after Next, without browser or websocket (Streamlit's AppTest)."""
    from streamlit.testing.v1 import AppTest

    os.environ.update(ATTENTION_STUDIO_CHECKPOINTS=str(checkpoints), ATTENTION_STUDIO_RUNS=str(runs),
                      ATTENTION_STUDIO_DEFAULT=default)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/decode.py").run()
    samples = []
    for _ in range(clicks):
        if at.button(key="decode_next").disabled:
            at.slider(key="decode_step").set_value(1).run()
        began = time.perf_counter()
        at.button(key="decode_next").click().run()
        samples.append(1000 * (time.perf_counter() - began))
        if at.exception:
            raise RuntimeError(f"the Decode page raised: {at.exception[0].value}")
    return samples


def run(checkpoints: Path, clicks: int = 20, cold: int = 3, warm: int = 5) -> tuple[list[Measure], dict]:
    """All app speed measures on the default model of `checkpoints`; returns them and run details."""
    from playwright.sync_api import sync_playwright

    default = default_model(checkpoints)
    ckpt = load_checkpoint(checkpoints / default, load_optimizer=False)
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="attention-studio-bench-") as runs, sync_playwright() as pw:
        browser = launch_chromium(pw)
        cold_ms = []
        for _ in range(cold):
            with running_app(checkpoints, Path(runs), default=default) as server:
                cold_ms.append(first_page_ms(browser, server.url))
        with running_app(checkpoints, Path(runs), default=default) as server:
            first_page_ms(browser, server.url)  # warm the server up
            warm_ms = [first_page_ms(browser, server.url) for _ in range(warm)]
            page = new_page(browser)
            page.goto(server.url)
            wait_for(page, charts_condition("", 1), timeout_ms=60_000)
            open_page(page, "Decode")
            text = page.locator(".st-key-decode_text input").input_value()
            adapter = adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer)
            expected = greedy_decode(adapter, text, top_k=TOP_K)
            wait_for(page, decode_step_condition(1, texts=topk_texts(expected, 1)))
            cpu_before = cpu_seconds(server.pid), browser_cpu_seconds(server.pid)
            nexts, prevs = step_clicks(page, expected, clicks)
            n_clicks = len(nexts) + len(prevs)
            cpu_per_click = {"server": 1000 * (cpu_seconds(server.pid) - cpu_before[0]) / n_clicks,
                             "browser": 1000 * (browser_cpu_seconds(server.pid) - cpu_before[1]) / n_clicks}
            switch_ms = switches(page, expected.trace.n_layers("cross"), expected.trace.n_heads, clicks)
            errors += page_errors(page)
            errors += ["server log: Traceback"] if "Traceback" in server.log_text() else []
        browser.close()
        server_ms = server_side_next_ms(checkpoints, Path(runs), default, clicks)
    measures = [
        Measure("first page, first session after server start", tuple(cold_ms), FIRST_PAGE_MS),
        Measure("first page, new session on a warm server", tuple(warm_ms), FIRST_PAGE_MS),
        Measure("Next click → step charts updated, run over", tuple(m["done"] for m in nexts), CLICK_MS),
        Measure("  of which: first change shown (step heading)", tuple(m["heading"] for m in nexts)),
        Measure("  of which: step charts and top-k bars drawn", tuple(m["charts"] for m in nexts)),
        Measure("Prev click → step charts updated, run over", tuple(m["done"] for m in prevs)),
        Measure("layer / head switch → charts updated", tuple(switch_ms), CLICK_MS),
        Measure("Decode page script alone after Next (AppTest: no browser, no websocket)", tuple(server_ms)),
    ]
    measures = [m for m in measures if m.samples_ms]
    details = {"model": default, "checkpoints": str(checkpoints), "input": text, "output_steps": len(expected.steps),
               "cpu_ms_per_click": {who: round(ms) for who, ms in cpu_per_click.items()}, "errors": errors}
    return measures, details


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=Path, help="checkpoint root (default: checkpoints/)")
    parser.add_argument("--clicks", type=int, default=20, help="timed Next clicks and layer/head switches")
    parser.add_argument("--cold", type=int, default=3, help="server starts for the first-page time")
    parser.add_argument("--warm", type=int, default=5, help="new sessions on a warm server")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    checkpoints = args.checkpoints or shipped_checkpoints()
    load = os.getloadavg()[0]
    measures, details = run(checkpoints, args.clicks, args.cold, args.warm)
    details["load_average_1min_before"] = round(load, 2)
    details["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    print(f"model {details['model']} from {details['checkpoints']}; input {details['input']!r} "
          f"({details['output_steps']} output steps); 1-min load average {load:.1f} before, "
          f"{details['load_average_1min_after']:.1f} after")
    print(table(measures))
    print("CPU per Next/Prev click: server {server} ms, browser {browser} ms".format(**details["cpu_ms_per_click"]))
    print("errors on the page:", details["errors"] or "none")
    if args.json:
        args.json.write_text(json.dumps({"details": details, "measures": [m.to_dict() for m in measures]}, indent=1))


if __name__ == "__main__":
    main()
