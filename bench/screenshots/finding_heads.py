"""Screenshots of the head finder and of one head's page (docs/finding-heads.md), taken from the real app in headless
Chromium (docs/screenshots/).

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.finding_heads [--out docs/screenshots]

The Attention page of the shipped Multi30k model, its "Head statistics over a corpus" over the first 200 Multi30k
validation sentences (`../shared/data/multi30k/val.en.gz`, uploaded as a file) and the long-range detectors run:
"Find heads", every head of the three kinds by entropy and confidence, coloured by its pattern label, and its
table (finder.png). The page of
decoder self-attention layer 2 head 3 (a link), its statistics computed there over the model's validation
sentences: its strongest rows by decile, its tokens, distances and layer (head_page.png).
"""
from __future__ import annotations

import gzip
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from bench.screenshots.corpus import CORPUS, MULTI30K, SENTENCES, TEXT, _section
from bench.screenshots.pages import WIDTH, screenshot_app
from studio_browser import new_page, wait_charts, wait_idle


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        page = new_page(browser)
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        page.goto(f"{server.url}/attention?{urlencode({'model': MULTI30K, 'text': TEXT})}")
        wait_charts(page, r"heads and mean", 1, timeout_ms=120_000)
        page.get_by_text("A file (one sentence a line").click()
        with tempfile.TemporaryDirectory() as tmp:
            corpus = Path(tmp) / "val.en.txt"
            with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
                corpus.write_text("".join(next(lines) for _ in range(SENTENCES)), encoding="utf-8")
            uploader = page.locator('[data-testid="stMain"] [data-testid="stFileUploader"]').filter(
                has_text="Corpus file")
            uploader.wait_for(timeout=60_000)
            uploader.locator('input[type="file"]').set_input_files(str(corpus))
            page.get_by_text(f"Reads {SENTENCES} sentences").wait_for(timeout=60_000)
        wait_idle(page)
        button = page.locator(".st-key-attention_corpus_run button")
        button.scroll_into_view_if_needed()
        button.click()
        wait_charts(page, r"\d+ heads$", 1, timeout_ms=600_000)
        wait_idle(page)
        detectors = page.locator(".st-key-attention_finder_long_range button").first
        detectors.scroll_into_view_if_needed()
        detectors.click()
        page.locator(".st-key-attention_finder_long_range").wait_for(state="detached", timeout=120_000)
        wait_idle(page)
        page.locator(".st-key-attention_finder_colour").click()
        page.get_by_role("option", name="pattern", exact=True).click()
        wait_charts(page, r"\d+ heads$", 1, timeout_ms=60_000)
        wait_idle(page)
        _section(page, "Find heads", None, out / "finder.png")
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        link = {"model": MULTI30K, "kind": "decoder_self", "layer": 2, "head": 3}
        page.goto(f"{server.url}/head?{urlencode(link)}")
        run = page.locator(".st-key-head_corpus_run button").first
        run.wait_for(timeout=120_000)
        run.click()
        wait_charts(page, r"against layer 2", 1, timeout_ms=600_000)
        wait_idle(page)
        _section(page, "Strongest rows", None, out / "head_page.png")
    print(f"wrote finder.png and head_page.png to {out}")


if __name__ == "__main__":
    main()
