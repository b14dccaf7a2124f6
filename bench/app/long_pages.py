"""A document on the Decode and Attention pages in Chromium at 1280×720 (long set): T (a 2-layer, 4-head,
d_model-64 Qwen2-style toy, 131,072 positions) at 32k tokens, Q (the Qwen2-0.5B layout, 4 of its layers) at 8k, both
random from their configs and saved with `save_pretrained` to a temporary folder (nothing downloaded).

On Decode the document is uploaded as a text file (the page's own input: its file beside the box, the estimate,
"Decode the document"); then a new session opens Attention and pastes the same text (the decode and its summaries
are kept for every session). Each page is checked: no exception box, nothing wider than 1280 px (the page, the main
block and every chart's scrollWidth and right edge), the decode steps' rows, the overview, the zoomed tile and a
row's strip drawn. Times: the press of "Decode the document" to the decode steps' rows (the first map), to the
overview (the current head's pass) and to the layer's head statistics (every head's pass); on Attention, the text's
run to the same.
Screenshots (each view at 1280×720 and the whole page) go to `--out` (a new temporary folder by default).

    PYTHONPATH=. .venv/bin/python -m bench.app.long_pages [T Q] [--tokens-t 32768] [--tokens-q 8192] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common.long_models import build_model, document
from bench.common.long_models import load_average as _load
from studio_browser import PAGE_SETUP_JS, launch_chromium, page_errors, running_app, shipped_checkpoints, wait_idle
from tests.e2e.layout_check import LAYOUT_CHECK_JS

LONG = True  # minutes: a 32k-token decode and a 0.8 GB model's 8k-token decode, each in a browser
WIDTH, HEIGHT = 1280, 720
TIMEOUT_MS = 900_000
MODELS = {"T": ("long-toy", 32768), "Q": ("qwen2-0.5b-4-layers", 8192)}
OVERVIEW, STRIP = "st-key-map_overview", re.compile(r"Row [\d,]+ over all [\d,]+ keys")
NAMES = ("step rows", "overview", "zoom", "row strip")
# the charts of the document view, found by their titles (Vega draws the title into the svg or as the aria label)
CHARTS_JS = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].map((c, index) => {
  const drawing = c.querySelector('svg, canvas');
  const box = c.closest('[data-testid="stElementContainer"]');
  const r = c.getBoundingClientRect();
  let shown = r.right;  // its right edge as drawn: clipped by any box that scrolls or hides sideways
  for (let e = c.parentElement; e; e = e.parentElement) {
    if (getComputedStyle(e).overflowX !== 'visible') shown = Math.min(shown, e.getBoundingClientRect().right);
  }
  return {index, key: (box && (box.getAttribute('class') || '').match(/st-key-\\S+/)?.[0]) || '',
          text: [...c.querySelectorAll('svg text')].map((t) => t.textContent).join(' | ').slice(0, 300),
          label: ((drawing && drawing.getAttribute('aria-label')) || '').slice(0, 300),
          drawn: !!drawing, scroll: c.scrollWidth, right: Math.round(r.right), shown: Math.round(shown),
          width: Math.round(r.width), top: Math.round(r.top + window.scrollY)};
})"""
SCROLL_JS = """(i) => document.querySelectorAll('[data-testid="stVegaLiteChart"]')[i]
  .closest('[data-testid="stElementContainer"]').scrollIntoView({block: 'start'})"""
WIDTHS_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const block = document.querySelector('[data-testid="stMainBlockContainer"]');
  const wide = [...main.querySelectorAll('*')].filter((e) => e.getBoundingClientRect().right > %d + 1)
    .map((e) => (e.getAttribute('data-testid') || e.tagName) + ' ' + Math.round(e.getBoundingClientRect().right));
  return {page: document.documentElement.scrollWidth, main: main.scrollWidth, block: block.scrollWidth,
          beyond: wide.slice(0, 10)};
}""" % WIDTH
TEXT_JS = "(s) => document.querySelector('[data-testid=\"stMain\"]').innerText.includes(s)"


def _views(page: Any) -> dict[str, dict]:
    """The document view's charts: the overview (its key), the decode steps' rows (the chart right above it), the
    zoomed tile (between it and the strip) and a row's strip ("Row N over all K keys"); canvas charts draw no text, so
    the order on the page names them."""
    charts = sorted(page.evaluate(CHARTS_JS), key=lambda c: c["top"])
    at = next((i for i, c in enumerate(charts) if c["key"] == OVERVIEW), None)
    if at is None:
        return {}
    found = {"overview": charts[at]}
    if at > 0:
        found["step rows"] = charts[at - 1]
    strip = next((i for i in range(at + 1, len(charts)) if STRIP.search(charts[i]["text"])), None)
    if strip is not None:
        found["row strip"] = charts[strip]
        if strip == at + 2:
            found["zoom"] = charts[at + 1]
    return found


def _wait_text(page: Any, text: str) -> float:
    page.wait_for_function(TEXT_JS, arg=text, timeout=TIMEOUT_MS, polling=500)
    return time.perf_counter()


def _wait_view(page: Any, name: str) -> float:
    """Wait until the chart of view `name` is drawn; the time it was seen."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        chart = _views(page).get(name)
        if chart is not None and chart["drawn"]:
            return time.perf_counter()
        page.wait_for_timeout(100)
    raise TimeoutError(f"no {name} drawn in {TIMEOUT_MS / 1000:.0f} s")


def check_page(page: Any, label: str, out: Path) -> dict:
    """The page's checks once the document view is drawn: exceptions, widths, views; screenshots of each view."""
    wait_idle(page, TIMEOUT_MS)
    views = _views(page)
    widths = page.evaluate(WIDTHS_JS)
    layout = page.evaluate(LAYOUT_CHECK_JS)
    found = {"errors": page_errors(page), "widths": widths, "missing": [v for v in NAMES if v not in views],
             "charts": {n: {k: c[k] for k in ("scroll", "right", "width")} for n, c in views.items()},
             "layout": {k: v for k, v in layout.items() if v}}
    charts = page.evaluate(CHARTS_JS)  # every chart of the page, the document's and the rest
    found["scrolls"] = [f"{c['key'] or c['text'][:40] or 'a canvas chart'} ({c['scroll']} px)" for c in charts
                        if c["right"] > WIDTH]  # in a box that scrolls sideways: only its part in view is drawn
    wide = [f"{c['key'] or c['text'][:40] or 'a canvas chart'} (drawn to {c['shown']} px, scroll {c['scroll']})"
            for c in charts if c["shown"] > WIDTH or c["scroll"] > WIDTH]
    if max(widths["page"], widths["main"], widths["block"]) > WIDTH:
        wide.append(f"page {widths}")
    found["wider"] = wide
    found["ok"] = not (found["errors"] or found["missing"] or wide)
    page.screenshot(path=str(out / f"{label}_top.png"))
    for name, chart in views.items():  # each view at the top of the 1280×720 window (the main area scrolls)
        page.evaluate(SCROLL_JS, chart["index"])
        page.wait_for_timeout(400)
        page.screenshot(path=str(out / f"{label}_{name.replace(' ', '_')}.png"))
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": WIDTH, "height": int(height)})  # the whole page laid out at once
    page.wait_for_timeout(800)
    wait_idle(page, TIMEOUT_MS)
    page.screenshot(path=str(out / f"{label}_whole.png"))
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    return found


def open_document(browser: Any, url: str, text: str, doc: Path, upload: bool) -> tuple[Any, dict]:
    """A new session on `url`: the text uploaded (or pasted) into the page's own input, the estimate read; the times
    from the press (or the paste) to the decode steps' rows, the overview and the head statistics."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    context.add_init_script(PAGE_SETUP_JS)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    name = "decode" if "/decode" in url else "attention"  # the page's own input: its box and its file
    if upload:
        page.locator(f".st-key-{name}_text_upload button").first.click()  # the popover beside the box
        page.locator(f".st-key-{name}_text_file input[type=file]").set_input_files(str(doc))
    else:
        box = page.locator(f".st-key-{name}_text textarea")
        box.fill(text)
        box.press("Control+Enter")
    start = time.perf_counter()
    times: dict = {}
    page.get_by_text("tokens of the model's").wait_for()  # the estimate
    if upload:  # the file's popover closes once the file is read; Escape is harmless if a Streamlit keeps it open
        page.keyboard.press("Escape")
    times["estimate"] = page.get_by_text("tokens of the model's").first.inner_text()
    button = page.locator(".st-key-document_job_run button")
    if button.count():  # not decoded yet: confirm the estimate
        button.click()
        start = time.perf_counter()
    times["step_rows_s"] = _wait_view(page, "step rows") - start
    times["overview_s"] = _wait_view(page, "overview") - start
    times["statistics_s"] = _wait_text(page, "from the same streamed pass") - start
    _wait_view(page, "zoom")
    _wait_view(page, "row strip")
    return page, times


def run_model(kind: str, root: Path, out: Path, tokens: int) -> dict:
    name, _ = MODELS[kind]
    start = time.perf_counter()
    folder = build_model(kind, root / "hf" / name)
    text = document(folder, tokens)
    doc = root / f"{kind.lower()}.txt"
    doc.write_text(text, encoding="utf-8")
    print(f"{kind} built and saved in {time.perf_counter() - start:.0f} s; load {_load()}", flush=True)
    env = {"ATTENTION_STUDIO_HF_MODELS": str(root / "hf"), "ATTENTION_STUDIO_INPUTS": str(root / "inputs")}
    from playwright.sync_api import sync_playwright
    result: dict = {"model": kind, "chars": len(text), "load_before": _load()}
    with running_app(shipped_checkpoints(), root / "runs", extra_env=env, start_timeout=120) as app, \
            sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            for page_name, upload in (("decode", True), ("attention", False)):
                page, times = open_document(browser, f"{app.url}/{page_name}?model=hf:{name}", text, doc, upload)
                found = check_page(page, f"{kind}_{page_name}", out)
                result[page_name] = {**times, **found, "load": _load()}
                print(f"{kind} {page_name}: {json.dumps(result[page_name])}", flush=True)
                page.context.close()
        finally:
            browser.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="T, Q or both (default: both)")
    parser.add_argument("--tokens-t", type=int, default=MODELS["T"][1])
    parser.add_argument("--tokens-q", type=int, default=MODELS["Q"][1])
    parser.add_argument("--out", type=Path, default=None, help="screenshots (default: a new temporary folder)")
    args = parser.parse_args()
    if set(args.models) - set(MODELS):  # argparse's choices refuse nargs="*"'s empty default on Python 3.12+
        parser.error(f"models are {' and '.join(MODELS)}, not {', '.join(sorted(set(args.models) - set(MODELS)))}")
    out = args.out or Path(tempfile.mkdtemp(prefix="long_pages_"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"screenshots to {out}; load {_load()}", flush=True)
    failed = []
    for kind in args.models or ["T", "Q"]:
        with tempfile.TemporaryDirectory(prefix=f"long_pages_{kind}_") as tmp:
            found = run_model(kind, Path(tmp), out, args.tokens_t if kind == "T" else args.tokens_q)
        for page_name in ("decode", "attention"):
            p = found[page_name]
            print(f"{kind} {page_name}: {p['estimate']}; step rows {p['step_rows_s']:.1f} s, overview "
                  f"{p['overview_s']:.1f} s, statistics {p['statistics_s']:.1f} s; widest page {p['widths']['page']} "
                  f"px; errors {p['errors'] or 'none'}; wider {p['wider'] or 'none'}; missing {p['missing'] or 'none'}"
                  f"; scrolling sideways {p['scrolls'] or 'none'}; layout {p['layout'] or 'clean'}; load {p['load']}",
                  flush=True)
            if not p["ok"]:
                failed.append(f"{kind} {page_name}")
    print(f"screenshots in {out}; {'FAILED: ' + ', '.join(failed) if failed else 'every page passed'}")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
