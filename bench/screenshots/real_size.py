"""Screenshots of the views real sizes need (docs/screenshots/*.png), on random Hugging Face models of real shapes.

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.real_size [--out docs/screenshots] [--models DIR]

- `head_overview.png`: the Attention page of a BART of bart-large's shape (12+12 layers x 16 heads) on the 20-word
  caption, which opens on the head overview (layers x heads, one cell per head) above the large map.
- `long_input.png`: the same model's Decode page on a 500-token input in a 1280-px window: the rows map takes the
  page's width and shows a window of keys (a slider moves it), the source strip wraps within the page.

The models are `bench.common.shapes`' (random weights, built from their configs, saved into a models directory);
`--models DIR` keeps them between runs.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from bench.common.shapes import BART, CAPTION, long_text, save_model
from bench.screenshots.pages import full_page
from studio_browser import (
    PAGE_SETUP_JS,
    ROOT,
    charts_condition,
    launch_chromium,
    page_errors,
    running_app,
    shipped_checkpoints,
    wait_for,
)

TIMEOUT_MS = 600_000


def shoot(browser, url: str, path: Path, width: int) -> None:
    """Open `url` in a new session at `width` px, wait for its charts, and capture the whole page."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_init_script(PAGE_SETUP_JS)
    page = context.new_page()
    page.goto(url, wait_until="commit")
    wait_for(page, charts_condition("", 2), TIMEOUT_MS)
    errors = page_errors(page)
    if errors:
        raise RuntimeError(f"{url}: {errors}")
    full_page(page, path, width)
    context.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--models", type=Path, help="models directory to build into and reuse (default: temporary)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        models = args.models or Path(tmp) / "models"
        if not (models / BART / "config.json").is_file():
            save_model(BART, models / BART)
        views = {"head_overview.png": ("attention", {"model": f"hf:{BART}", "text": CAPTION}, 1440),
                 "long_input.png": ("decode", {"model": f"hf:{BART}", "text": long_text(models / BART, 0)}, 1280)}
        with running_app(shipped_checkpoints(), Path(tmp) / "runs",
                         extra_env={"ATTENTION_STUDIO_HF_MODELS": str(models)}) as server, sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                for name, (path, query, width) in views.items():
                    shoot(browser, f"{server.url}/{path}?{urlencode(query)}", args.out / name, width)
            finally:
                browser.close()
    print(f"wrote {', '.join(views)} to {args.out}")


if __name__ == "__main__":
    main()
