"""Screenshots of the document view (docs/screenshots/document_*.png): a long input on the Decode page, in a 1280-px
window, on a random Qwen2-style model with an 8,192-token context (2 layers, 4 heads; its queries' and keys'
projections scaled up so that its weights peak, as a trained model's do, rather than spread evenly).

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.documents [--out docs/screenshots] [--tokens 4000]

- `document_overview.png`: the decode steps' rows over every key (exact), then one head's overview of the whole
  input (the max of each cell, from the streamed pass) and the layer's head statistics.
- `document_zoom.png`: the zoomed region, its weights recomputed exactly from the store.
- `document_row.png`: a query's row as a strip over every key, with its top keys named.

The document (Multi30k lines, line breaks kept) is kept on the server under its hash beforehand, so the page opens
from a link (`doc=HASH&dsteps=6&zoom=0-191,0-191`) as a shared link would; the decode is started by its button, as
a user would.
"""
from __future__ import annotations

import argparse
import gzip
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from studio_browser import (
    PAGE_SETUP_JS,
    ROOT,
    charts_condition,
    launch_chromium,
    page_errors,
    running_app,
    shipped_checkpoints,
    wait_for,
    wait_idle,
)
from tests.helpers.hf_causal_models import SIZE, build, lines
from ui.server import text_hash

NAME = "qwen2-document"
WIDTH = 1280
TIMEOUT_MS = 600_000
STEPS = 6
ZOOM = "0-191,0-191"  # the zoom shown: the input's first 192 tokens (rows x keys), where the causal triangle begins
SHARPEN = 20.0  # the random queries' and keys' scale: peaked weights, as a trained model's
# file -> (a text of the first element, how many elements before it, a text of the last, how many after it): each
# screenshot spans those elements of the page (charts drawn on a canvas have no text to find, their captions do)
SHOTS = {"document_overview.png": ("Exact, from the store", 1, "from the same streamed pass", 0),
         "document_zoom.png": ("Zoom: rows", 0, "Zoom: keys", 1),
         "document_row.png": ("A query's row", 0, "Top keys of row", 0)}
SPAN_JS = """([first, before, last, after]) => {
  const boxes = [...document.querySelectorAll('[data-testid="stElementContainer"]')]
    .filter((e) => e.offsetHeight > 0);
  const found = boxes.findIndex((e) => e.textContent.includes(first));
  const start = found - before;
  const end = boxes.findIndex((e, i) => i >= found && e.textContent.includes(last)) + after;
  if (found < 0 || start < 0 || end < found || end >= boxes.length) return null;
  const top = boxes[start].getBoundingClientRect(), bottom = boxes[end].getBoundingClientRect();
  const width = Math.max(...boxes.slice(start, end + 1).map((e) => e.getBoundingClientRect().right)) - top.left;
  return {x: top.left - 8, y: top.top + window.scrollY - 8, width: width + 16, height: bottom.bottom - top.top + 16};
}"""


def sharpen(folder: Path, scale: float = SHARPEN) -> None:
    """Scale the random queries' and keys' projections by `scale`, so each head's weights peak (a random model's are
    nearly uniform over thousands of keys, and its views show nothing); saved in place."""
    import torch
    from transformers import AutoModelForCausalLM

    network = AutoModelForCausalLM.from_pretrained(folder)
    with torch.no_grad():
        for layer in network.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                proj.weight.mul_(scale)
                if proj.bias is not None:
                    proj.bias.mul_(scale)
    network.save_pretrained(folder)


def document(models: Path, tokens: int) -> str:
    """Multi30k lines joined by line breaks, about `tokens` tokens for the model's tokenizer."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(models / NAME)
    pool = lines(tokens // 5 + 100)
    n = next((i for i in range(20, len(pool), 20) if len(tok("\n".join(pool[:i])).input_ids) > tokens), len(pool))
    return "\n".join(pool[:n])


def shoot(browser, url: str, out: Path) -> None:
    """Open the document's link, start its decode, wait for its views, and capture each span of SHOTS."""
    context = browser.new_context(viewport={"width": WIDTH, "height": 900})
    context.add_init_script(PAGE_SETUP_JS)
    page = context.new_page()
    page.goto(url, wait_until="commit")
    page.get_by_role("button", name="Decode the document").click(timeout=TIMEOUT_MS)
    page.get_by_text("from the same streamed pass").wait_for(timeout=TIMEOUT_MS)  # the summaries are drawn
    page.get_by_text("Top keys of row").wait_for(timeout=TIMEOUT_MS)
    wait_for(page, charts_condition("", 3), TIMEOUT_MS)
    errors = page_errors(page)
    if errors:
        raise RuntimeError(f"{url}: {errors}")
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": WIDTH, "height": max(int(height), 900)})  # the whole page laid out at once
    page.wait_for_timeout(800)
    wait_idle(page, TIMEOUT_MS)
    for name, span in SHOTS.items():
        clip = page.evaluate(SPAN_JS, list(span))
        if clip is None:
            raise RuntimeError(f"{name}: the page shows no element with {span[0]!r} followed by {span[2]!r}")
        page.screenshot(path=str(out / name), clip=clip, full_page=True)
    context.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--tokens", type=int, default=4000, help="the document's length in tokens")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        models, inputs = Path(tmp) / "models", Path(tmp) / "inputs"
        build("qwen2", models / NAME, size={**SIZE, "positions": 8192})
        sharpen(models / NAME)
        text = document(models, args.tokens)
        inputs.mkdir()
        (inputs / f"{text_hash(text)}.txt.gz").write_bytes(gzip.compress(text.encode("utf-8")))
        query = {"model": f"hf:{NAME}", "doc": text_hash(text), "dsteps": STEPS, "zoom": ZOOM}
        env = {"ATTENTION_STUDIO_HF_MODELS": str(models), "ATTENTION_STUDIO_INPUTS": str(inputs)}
        with running_app(shipped_checkpoints(), Path(tmp) / "runs", extra_env=env) as server, \
                sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                shoot(browser, f"{server.url}/decode?{urlencode(query)}", args.out)
            finally:
                browser.close()
    print(f"wrote {', '.join(SHOTS)} to {args.out}")


if __name__ == "__main__":
    main()
