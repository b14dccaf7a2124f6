"""How long the all-heads grid takes to draw in Chromium at bart-large's shape, for each way of drawing it.

One kind (cross-attention) of a random trace with 12 decoder layers x 16 heads (+ the mean: 204 panels), 24 query and
24 key tokens (a 20-word input), panels 60 px wide as the Attention page draws them at 16 heads. Each option is drawn
in the same headless Chromium page (vega-embed from vl-convert's bundle, no Streamlit), fresh element each time;
time = JSON.parse of the spec + vegaEmbed + the view's run + two animation frames (the first paint after it);
build_ms = the Python time to build the spec (server side, not included in ms):

- facet-svg: `attention_grid` (today's Altair facet) with Vega's SVG renderer;
- facet-canvas: the same with the canvas renderer;
- facet-streamlit: what Streamlit 1.67 does with it by itself (more than 2,000 rows in a dataset: canvas, and
  more than 5,000 rows in all: `config.mark.aria` false);
- rects-svg / rects-canvas: `attention_panels(draw="rects")`: one dataset, one rect mark, each cell's position
  computed from its layer, head, query and key (no facet, no per-panel scales or axes);
- images-svg / images-canvas: `attention_panels(draw="images")`: one PNG per panel made on the server (numpy
  and zlib), one image mark over 204 rows; clicks and the panel tooltip kept, no per-cell tooltip;
- png: the whole grid as one PNG made by numpy + PIL on the server (its build time added), shown as an <img>
  (what st.image would show: no hover, no clicks).

`PYTHONPATH=. .venv/bin/python -m bench.app.grid_render [--repeats 3] [--json PATH]`
"""
from __future__ import annotations

import argparse
import base64
import io
import json
import os
import statistics
import time

import numpy as np
import torch
import vl_convert as vlc
from PIL import Image, ImageDraw
from playwright.sync_api import sync_playwright

from studio_browser import launch_chromium
from transformer.charts import attention_grid, attention_panels
from transformer.charts.style import BLUES
from transformer.decode import AttentionTrace

LAYERS, HEADS, TOKENS, CELL, KIND = 12, 16, 24, 60, "cross"

DRAW_JS = """async ([text, renderer]) => {
  const el = document.createElement('div');
  document.body.appendChild(el);
  const start = performance.now();
  const result = await vegaEmbed(el, JSON.parse(text), {renderer, actions: false});
  await result.view.runAsync();
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  const ms = performance.now() - start;
  const marks = el.querySelectorAll('path, rect').length;
  result.finalize();
  el.remove();
  return [ms, marks];
}"""

IMAGE_JS = """async (b64) => {
  const start = performance.now();
  const img = new Image();
  img.src = 'data:image/png;base64,' + b64;
  await img.decode();
  document.body.appendChild(img);
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  const ms = performance.now() - start;
  img.remove();
  return [ms, 1];
}"""


def bart_large_trace(seed: int = 0) -> AttentionTrace:
    """Random softmax maps of bart-large's decoder shape (12 layers x 16 heads) on 24 source and target tokens."""
    g = torch.Generator().manual_seed(seed)
    src = [f"▁w{i}" for i in range(TOKENS - 1)] + ["</s>"]
    tgt = ["</s>"] + [f"▁v{i}" for i in range(TOKENS - 1)]

    def weights(q: int, k: int, causal: bool = False) -> torch.Tensor:
        scores = torch.randn(LAYERS, HEADS, q, k, generator=g)
        if causal:
            scores = scores.masked_fill(torch.ones(q, k, dtype=torch.bool).triu(1), float("-inf"))
        return torch.softmax(scores, -1)

    return AttentionTrace(tuple(src), tuple(tgt), weights(TOKENS, TOKENS), weights(TOKENS, TOKENS, True),
                          weights(TOKENS, TOKENS))


def grid_png(trace: AttentionTrace, kind: str, cell: int = CELL, gap: int = 10, header: int = 14) -> bytes:
    """Every layer x head (+ mean) as one PNG: Blues colours, nearest-neighbour cells, an "L1 H1" label per panel."""
    w = trace.weights(kind).float()
    w = torch.cat([w, w.mean(1, keepdim=True)], 1).numpy()  # (L, H + 1, Q, K)
    n_layers, n_panels, q, k = w.shape
    px = max(1, cell // max(q, k))
    stops = np.linspace(0, 1, len(BLUES))
    rgb = np.array([[int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in BLUES], dtype=np.float32)
    colours = np.stack([np.interp(w, stops, rgb[:, c]) for c in range(3)], -1).astype(np.uint8)  # (L, P, Q, K, 3)
    pw, ph = k * px, q * px
    canvas = np.full((n_layers * (ph + header + gap), n_panels * (pw + gap), 3), 255, dtype=np.uint8)
    for li in range(n_layers):
        for pi in range(n_panels):
            y, x = li * (ph + header + gap) + header, pi * (pw + gap)
            canvas[y:y + ph, x:x + pw] = colours[li, pi].repeat(px, 0).repeat(px, 1)
    image = Image.fromarray(canvas)
    draw = ImageDraw.Draw(image)
    for li in range(n_layers):
        for pi in range(n_panels):
            draw.text((pi * (pw + gap), li * (ph + header + gap)), f"L{li + 1} " + ("mean" if pi == n_panels - 1
                                                                                 else f"H{pi + 1}"), fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


BUILD_MS: dict[str, float] = {}  # Python time to build each chart's spec (the server's share of a page run)


def _timed(name: str, build):
    start = time.perf_counter()
    spec = build()
    BUILD_MS[name] = (time.perf_counter() - start) * 1000
    return spec


def specs(trace: AttentionTrace) -> dict[str, tuple[str, str]]:
    """Option name -> (spec JSON, renderer); the renderer is also written into usermeta.embedOptions (which
    vega-embed, like Streamlit, lets override its own options)."""
    facet = _timed("facet", lambda: attention_grid(trace, KIND, cell=CELL).to_dict(validate=False))
    rects = _timed("rects", lambda: attention_panels(trace, KIND, cell=CELL, draw="rects").to_dict(validate=False))
    images = _timed("images", lambda: attention_panels(trace, KIND, cell=CELL).to_dict(validate=False))

    def spec(base: dict, renderer: str, aria: bool = True) -> tuple[str, str]:
        drawn = json.loads(json.dumps(base))
        drawn["usermeta"] = {"embedOptions": {"renderer": renderer}}
        if not aria:
            drawn.setdefault("config", {}).setdefault("mark", {})["aria"] = False
        return json.dumps(drawn), renderer

    return {"facet-svg": spec(facet, "svg"), "facet-canvas": spec(facet, "canvas"),
            "facet-streamlit": spec(facet, "canvas", aria=False), "rects-svg": spec(rects, "svg"),
            "rects-canvas": spec(rects, "canvas", aria=False), "images-svg": spec(images, "svg"),
            "images-canvas": spec(images, "canvas")}


def run(repeats: int = 3) -> dict[str, dict[str, float]]:
    """Median ms to the first paint per option (and the spec's size), all in one browser page."""
    trace = bart_large_trace()
    drawn = specs(trace)
    results: dict[str, dict[str, float]] = {}
    html = f"<!doctype html><html><body><script>{vlc.javascript_bundle()}</script></body></html>"
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_content(html)
        page.wait_for_function("() => typeof vegaEmbed === 'function'")
        for name, (text, renderer) in drawn.items():
            page.evaluate(DRAW_JS, [text, renderer])  # warm-up: code paths compiled, fonts loaded
            times = [page.evaluate(DRAW_JS, [text, renderer]) for _ in range(repeats)]
            results[name] = {"ms": statistics.median(t[0] for t in times), "svg_elements": times[0][1],
                             "spec_mb": len(text) / 1e6, "build_ms": BUILD_MS[name.split("-")[0]]}
            print(name, json.dumps(results[name]), flush=True)
        png_ms = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            png = grid_png(trace, KIND)
            made = (time.perf_counter() - start) * 1000
            shown, _ = page.evaluate(IMAGE_JS, base64.b64encode(png).decode())
            png_ms.append((made, shown))
        png_ms = png_ms[1:]
        results["png"] = {"ms": statistics.median(a + b for a, b in png_ms),
                          "server_ms": statistics.median(a for a, _ in png_ms),
                          "browser_ms": statistics.median(b for _, b in png_ms), "spec_mb": len(png) / 1e6}
        print("png", json.dumps(results["png"]), flush=True)
        browser.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    print("load average before:", os.getloadavg()[0])
    results = run(args.repeats)
    print("load average after:", os.getloadavg()[0])
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
