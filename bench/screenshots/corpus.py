"""Screenshots of head statistics over a corpus (docs/corpus-statistics.md) and of an encoder-only model's
predictions at the masks (docs/models.md), taken from the real app in headless Chromium (docs/screenshots/).

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.corpus [--out docs/screenshots]

The Attention page of the shipped Multi30k model, its "Head statistics over a corpus" run over the first 200 Multi30k
validation sentences (`../shared/data/multi30k/val.en.gz`, uploaded as a file; the project ships no corpus): the
sortable table, sorted by confidence, with the examples of a head (corpus_stats.png) and the cross-attention heads
clustered by the Jensen-Shannon divergence of their attention (corpus_clusters.png). The Decode page of the shipped
encoder-only toy model on an English-German pair with two tokens clicked to mask (`masks=10,14` in the link): each
mask's top-k and how far every head's attention moved (masked_decode.png).
"""
from __future__ import annotations

import gzip
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.screenshots.lens import _tall
from bench.screenshots.pages import WIDTH, screenshot_app
from studio_browser import ROOT, new_page, wait_charts, wait_idle

MULTI30K = "shipped:multi30k-en-de"
ENCODER_ONLY = "shipped:toy-en-de-encoder-only"
TEXT = "A man in a blue shirt is riding a bike ."
CORPUS = ROOT / ".." / "shared" / "data" / "multi30k" / "val.en.gz"
SENTENCES = 200
PAIR = ("the old man sees a small dog", "der alte mann sieht einen kleinen hund")
MASKS = "10,14"  # "mann" and "hund" among "the old man sees a small dog </s> der alte mann ... hund </s>"


def _section(page: Any, first: str | None, last: str | None, path: Any) -> None:
    """The main area from the heading, label or paragraph starting with `first` (None: the area's top) to the next one
    starting with `last` (None: the area's end), the sidebar left out."""
    _tall(page)
    page.wait_for_timeout(1500)  # the charts redraw at the new height
    wait_idle(page)
    box = page.evaluate("""([first, last]) => {
        const main = document.querySelector('[data-testid="stMain"]').getBoundingClientRect();
        const texts = [...document.querySelectorAll('h1, h3, label, p')];
        const top = first ? texts.find(e => e.textContent.trim().startsWith(first)).getBoundingClientRect().top - 12
                          : main.top;
        const end = last ? texts.filter(e => e.getBoundingClientRect().top > top + 20)
                                .find(e => e.textContent.trim().startsWith(last)) : null;
        const bottom = end ? end.getBoundingClientRect().top - 8 : main.bottom;
        return {x: main.left, y: top, width: main.width, height: bottom - top};
    }""", [first, last])
    page.screenshot(path=str(path), clip=box)


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
            try:
                page.get_by_text(f"Reads {SENTENCES} sentences").wait_for(timeout=60_000)
            except Exception:
                page.screenshot(path=str(out / "debug.png"), full_page=True)
                raise
        wait_idle(page)
        button = page.locator(".st-key-attention_corpus_run button")
        button.scroll_into_view_if_needed()
        button.click()
        wait_charts(page, r"Jensen-Shannon", 1, timeout_ms=600_000)
        page.get_by_text("Most like its average").wait_for(timeout=60_000)
        wait_idle(page)
        page.get_by_text("Cross-attention", exact=True).last.click()
        wait_idle(page)
        _section(page, "Head statistics over a corpus", "Clusters of", out / "corpus_stats.png")
        _section(page, "Clusters of", None, out / "corpus_clusters.png")
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        link = {"model": ENCODER_ONLY, "text": PAIR[0], "pair": PAIR[1], "masks": MASKS}
        page.goto(f"{server.url}/decode?{urlencode(link)}")
        wait_charts(page, r"Mask at token", 2, timeout_ms=120_000)
        wait_charts(page, r"How far each head", 1, timeout_ms=60_000)
        _section(page, None, "Switch heads off", out / "masked_decode.png")
    print(f"wrote corpus_stats.png, corpus_clusters.png and masked_decode.png to {out}")


if __name__ == "__main__":
    main()
