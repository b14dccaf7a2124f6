"""The app at real sizes in headless Chromium: random Hugging Face models of real shapes, opened by link.

    PYTHONPATH=. .venv/bin/python -m bench.app.real_size [bart opus gpt2 load] [--n 3] [--clicks 8] [--json PATH]

Models are built from their configs with random weights (nothing is downloaded), saved with `save_pretrained` into a
models directory the server lists (ATTENTION_STUDIO_HF_MODELS; a link names one `model=hf:FOLDER`; all are below the
app's cap, DEFAULT_MAX_PARAMS = 1.5 B). BART and GPT-2 get a byte-level BPE of 8,000 pieces trained on Multi30k's
English lines (the caption is 24 tokens, as with bart-large's own), the Marian the tiny test tokenizer; their end
tokens are made to lose, so outputs run to the step limit. Each part has a server of its own (a model's first open
includes its load) and the shipped `multi30k-en-de` on that server as its baseline:

- `bart`, bart-large's shape (406M parameters, 12+12 layers x 16 heads): the Attention link of the 20-word caption
  to its large map and every panel of its grid (12 layers x 17); the Decode link and Next clicks.
- `opus`, opus-mt-en-de's shape, a 500-token input: the Decode and the Attention link.
- `gpt2`, GPT-2 small's shape: the Decode link on a server that has not loaded it yet, then Next clicks.
- `load`: eight browser contexts open the bart Attention link at once; the server's memory (VmRSS of it and its
  children, the peak from VmHWM) against the bytes of the model's safetensors.

Times are taken in the page, from navigation start (a link) or the press (a click) to the first frame at which the
view is drawn on an idle page (`studio_browser`'s waits), every grid panel included (as many images as panel labels).
Each link opens a new input (the caption with another number and colour), so no view comes from the decodes the
server caches for all sessions: what the first person to open a link waits for. Pages are 1280 x 800; each view's
width is checked (the document's and Streamlit's main block's scroll width, naming the charts that reach past it).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.common.measures import Measure, table
from bench.common.shapes import BART, CAPTIONS, GPT2, LONG_TOKENS, OPUS, long_text, save_model
from studio_browser import (
    IDLE_JS,
    PAGE_SETUP_JS,
    charts_condition,
    decode_step_condition,
    last_press,
    launch_chromium,
    page_errors,
    running_app,
    shipped_checkpoints,
    wait_for,
)

LONG = True  # real-shape models in Chromium, eight sessions at once

BASELINE = "shipped:multi30k-en-de"
NEEDS = {"bart": BART, "opus": OPUS, "gpt2": GPT2, "load": BART}  # the model each part opens
VIEWPORT = {"width": 1280, "height": 800}
ATTENTION_MS, NEXT_MS, LONG_MS, FIRST_MS, SPARE_GB = 3000, 500, 5000, 3000, 1.5
TIMEOUT_MS = 600_000

# [ms, panels] once the page is idle and a chart draws as many panel images as "L1 H1" labels, more than `more`.
GRID_JS = f"""(more) => {{
  if (!({IDLE_JS})()) return false;
  for (const chart of document.querySelectorAll('[data-testid="stVegaLiteChart"]')) {{
    const labels = [...chart.querySelectorAll('text')].filter((t) => /^L\\d+ (H\\d+|mean)$/.test(t.textContent));
    const images = chart.querySelectorAll('image').length;
    if (labels.length && images >= labels.length && images > more) return [performance.now(), images];
  }}
  return false;
}}"""
# The document's and the main block's widths, and the charts reaching past the main block ("heading (width px)").
FIT_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]'), edge = main.getBoundingClientRect().right;
  const name = (chart) => {
    const box = chart.closest('[data-testid="stElementContainer"]');
    const heading = box && box.previousElementSibling?.querySelector('.studio-chart-heading');
    return (heading || chart.querySelector('.role-title-text') || {textContent: 'a chart'}).textContent.slice(0, 60);
  };
  const wider = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')]
    .filter((c) => c.getBoundingClientRect().right > edge + 1)
    .map((c) => `${name(c)} (${Math.round(c.getBoundingClientRect().width)} px)`);
  return {viewport: innerWidth, document: document.documentElement.scrollWidth, main: main.scrollWidth,
          main_visible: main.clientWidth, wider};
}"""


def tree_memory(pid: int, field: str = "VmRSS") -> int:
    """`field` of /proc/PID/status in bytes, summed over the process and its descendants."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # it ended while we looked
    tree = [pid]
    for p in tree:
        tree += [child for child, parent in parents.items() if parent == p]
    lines = [line for p in tree for line in Path(f"/proc/{p}/status").read_text().splitlines()]
    return sum(int(line.split()[1]) * 1024 for line in lines if line.startswith(f"{field}:"))


def step_condition(t: int, causal: bool) -> tuple[str, list]:
    """The Decode page at step t (a causal model's prefix chart holds the prompt too, so it is not checked)."""
    return charts_condition(rf"\bstep {t}\b", 3, heading=f"Step {t} of") if causal else decode_step_condition(t)


def grid_drawn(page: Any, more: int = 0) -> tuple[float, int]:
    """(ms, panels) once every panel of the grid is drawn, more than `more` of them."""
    return tuple(page.wait_for_function(GRID_JS, arg=more, timeout=TIMEOUT_MS, polling="raf").json_value())


class Session:
    """One part's server and browser: opens links in new sessions, times them, keeps errors and page widths."""

    def __init__(self, server: Any, browser: Any, models: Path) -> None:
        self.server, self.browser, self.models = server, browser, models
        self.captions = iter(CAPTIONS)
        self.errors: list[str] = []
        self.fits: dict[str, dict] = {}
        self.memory: dict[str, int] = {}

    def drawn(self, page: Any, path: str, name: str = "") -> float:
        """Navigation start to the view drawn (Decode: step 1; Attention: the large map and every grid panel), ms."""
        if path == "attention":
            wait_for(page, charts_condition("Cross-attention · layer", 1), TIMEOUT_MS)
            ms = grid_drawn(page)[0]
        else:
            ms = wait_for(page, step_condition(1, name == GPT2), TIMEOUT_MS).drawn_at
        self.errors += page_errors(page)
        self.fits[f"{path}, {name or BASELINE}"] = page.evaluate(FIT_JS)
        return ms

    def page(self, path: str, model: str, text: str | None = None) -> Any:
        """A new browser context (its own Streamlit session) navigating to the link of `path` with `model` and `text`
        (by default a caption not opened yet)."""
        context = self.browser.new_context(viewport=VIEWPORT)
        context.add_init_script(PAGE_SETUP_JS)
        page = context.new_page()
        page.goto(f"{self.server.url}/{path}?{urlencode({'model': model, 'text': text or next(self.captions)})}",
                  wait_until="commit")
        return page

    def times(self, path: str, model: str, n: int, name: str = "", texts: list[str] | None = None
              ) -> tuple[float, ...]:
        """`drawn` of `n` new sessions on the link, one after another, each closed once drawn."""
        samples = []
        for i in range(n):
            page = self.page(path, model, texts[i] if texts else None)
            samples.append(self.drawn(page, path, name))
            page.context.close()
        return tuple(samples)

    def nexts(self, model: str, clicks: int, name: str = "") -> tuple[float, list[float]]:
        """The Decode link's first view, then Next `clicks` times (fewer for a shorter output), ms from each press."""
        page, causal = self.page("decode", model), name == GPT2
        first = self.drawn(page, "decode", name)
        n, samples = wait_for(page, step_condition(1, causal)).step[1], []
        for t in range(2, min(n, clicks + 1) + 1):
            page.locator(".st-key-decode_next button").click()
            samples.append(wait_for(page, step_condition(t, causal), TIMEOUT_MS).drawn_at - last_press(page))
        self.errors += page_errors(page)
        page.context.close()
        return first, samples


def part_bart(s: Session, n: int, clicks: int) -> list[Measure]:
    """The Attention link (map and every grid panel), the Decode link and Next clicks, against the shipped model."""
    model, links = f"hf:{BART}", []
    base_attention = s.times("attention", BASELINE, n)
    base_first, base_next = s.nexts(BASELINE, clicks)
    cold = s.times("attention", model, 1, BART)
    for _ in range(n):
        page = s.page("attention", model)
        links.append(s.drawn(page, "attention", BART))
        panels = grid_drawn(page)[1]
        s.fits[f"attention, {BART}, {panels} panels"] = page.evaluate(FIT_JS)
        if panels != 12 * 17:
            s.errors.append(f"the grid drew {panels} panels, not every layer's 17")
        page.context.close()
    first, nexts = s.nexts(model, clicks, BART)
    return [Measure("Attention link, multi30k-en-de (baseline)", base_attention),
            Measure("Attention link, bart-large shape, first open (load included)", cold),
            Measure("Attention link, bart-large shape → map + every grid panel (204)", tuple(links), ATTENTION_MS),
            Measure("Decode link, multi30k-en-de → step 1 (baseline)", (base_first,)),
            Measure("Decode link, bart-large shape → step 1", (first,)),
            Measure("Next, multi30k-en-de (baseline)", tuple(base_next)),
            Measure("Next, bart-large shape", tuple(nexts), NEXT_MS, "p95")]


def part_opus(s: Session, n: int, clicks: int) -> list[Measure]:
    """A 500-token input on the Decode and the Attention link, against the caption on the shipped model."""
    model, texts = f"hf:{OPUS}", [long_text(s.models / OPUS, seed) for seed in range(2 * n + 1)]
    long = f"opus-mt shape, {LONG_TOKENS} tokens"
    return [Measure("Decode link, multi30k-en-de, caption → step 1 (baseline)", s.times("decode", BASELINE, n)),
            Measure("Attention link, multi30k-en-de, caption (baseline)", s.times("attention", BASELINE, n)),
            Measure(f"Decode link, {long}, first open (load included)", s.times("decode", model, 1, OPUS, texts)),
            Measure(f"Decode link, {long} → step 1", s.times("decode", model, n, OPUS, texts[1:]), LONG_MS),
            Measure(f"Attention link, {long} → map + grid", s.times("attention", model, n, OPUS, texts[n + 1:]),
                    LONG_MS)]


def part_gpt2(s: Session, n: int, clicks: int) -> list[Measure]:
    """The Decode link's first view with the model's load, then Next, against the shipped model."""
    base_first, base_next = s.nexts(BASELINE, clicks)
    first, nexts = s.nexts(f"hf:{GPT2}", clicks, GPT2)
    return [Measure("Decode link, multi30k-en-de → step 1 (baseline)", (base_first,)),
            Measure("Decode link, GPT-2 small shape, not loaded yet → step 1", (first,), FIRST_MS),
            Measure("Decode link, GPT-2 small shape, loaded → step 1", s.times("decode", f"hf:{GPT2}", n, GPT2)),
            Measure("Next, multi30k-en-de (baseline)", tuple(base_next)),
            Measure("Next, GPT-2 small shape", tuple(nexts), NEXT_MS, "p95")]


def part_load(s: Session, n: int, clicks: int, sessions: int = 8) -> list[Measure]:
    """Eight sessions open the bart Attention link at once; the server's memory before, with one, with eight."""
    pid, model = s.server.pid, f"hf:{BART}"
    base = s.times("attention", BASELINE, 1)
    s.memory = {"weights (safetensors)": sum(f.stat().st_size for f in (s.models / BART).glob("*.safetensors")),
                "server, shipped model": tree_memory(pid)}
    one = s.times("attention", model, 1, BART)
    s.memory["server, bart loaded, one session"] = tree_memory(pid)
    pages = [s.page("attention", model) for _ in range(sessions)]
    at_once = [s.drawn(page, "attention", BART) for page in pages]
    s.memory[f"server, {sessions} sessions at once"] = tree_memory(pid)
    s.memory["server, peak (VmHWM)"] = tree_memory(pid, "VmHWM")
    for page in pages:
        page.context.close()
    return [Measure("Attention link, multi30k-en-de, one session (baseline)", base),
            Measure("Attention link, bart-large shape, one session (load included)", one),
            Measure(f"Attention link, bart-large shape, {sessions} sessions at once", tuple(at_once))]


PARTS = {"bart": part_bart, "opus": part_opus, "gpt2": part_gpt2, "load": part_load}


def run(parts: list[str], models: Path, n: int, clicks: int) -> dict:
    """Each part on a server of its own: its measures, errors, page widths, memory and the 1-min load average."""
    from playwright.sync_api import sync_playwright

    for name in sorted({NEEDS[part] for part in parts}):
        if not (models / name / "config.json").is_file():  # --models: built once, kept
            save_model(name, models / name)
    results = {}
    for part in parts:
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="attention-studio-bench-") as runs, \
                running_app(shipped_checkpoints(), Path(runs),
                            extra_env={"ATTENTION_STUDIO_HF_MODELS": str(models)}) as server, sync_playwright() as pw:
            browser = launch_chromium(pw)
            s = Session(server, browser, models)
            measures = PARTS[part](s, n, clicks)
            browser.close()
            errors = s.errors + (["server log: Traceback"] if "Traceback" in server.log_text() else [])
        results[part] = {"measures": measures, "errors": errors, "fits": s.fits, "memory": s.memory,
                         "load_average": [round(load, 2), round(os.getloadavg()[0], 2)]}
    return results


def report(results: dict) -> None:
    """Print each part's table, its page widths, memory and errors."""
    for part, result in results.items():
        print(f"\n## {part} (1-min load average {result['load_average'][0]} before, {result['load_average'][1]} after)"
              f"\n\n{table(result['measures'])}")
        for view, fit in result["fits"].items():
            fits = fit["document"] <= fit["viewport"] and fit["main"] <= fit["main_visible"]
            print(f"width at {fit['viewport']} px, {view}: document {fit['document']} px, main block {fit['main']} px "
                  f"in {fit['main_visible']} px: " + ("fits" if fits else f"**too wide**: {'; '.join(fit['wider'])}"))
        if memory := result["memory"]:
            print("\n| memory | GB |\n|---|--:|")
            print("\n".join(f"| {name} | {value / 1e9:.2f} |" for name, value in memory.items()))
            weights, _, one, eight, peak = memory.values()
            spare = max(eight, peak) - weights
            print(f"highest − weights: {spare / 1e9:.2f} GB (target ≤ {SPARE_GB} GB: "
                  f"{'pass' if spare <= SPARE_GB * 1e9 else '**miss**'}); seven more sessions added "
                  f"{(eight - one) / 1e9:.2f} GB ({'one copy' if eight - one < weights else '**a second copy?**'})")
        print("errors:", result["errors"] or "none")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"any of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--n", type=int, default=3, help="new sessions per link")
    parser.add_argument("--clicks", type=int, default=8, help="timed Next clicks")
    parser.add_argument("--models", type=Path, help="build the models here and keep them (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if set(args.parts) - set(PARTS):
        parser.error(f"unknown part(s): {', '.join(sorted(set(args.parts) - set(PARTS)))}")
    models = args.models or Path(tempfile.mkdtemp(prefix="attention-studio-models-"))
    try:
        results = run(args.parts or list(PARTS), models, args.n, args.clicks)
    finally:
        if args.models is None:
            shutil.rmtree(models)
    report(results)
    if args.json:
        args.json.write_text(json.dumps({part: {**r, "measures": [m.to_dict() for m in r["measures"]]}
                                         for part, r in results.items()}, indent=1))


if __name__ == "__main__":
    main()
