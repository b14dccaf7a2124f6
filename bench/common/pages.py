"""What the app benchmarks read off the app: the model it opens on, the top-k bars' texts of a step, the time to
a first page."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from studio_browser import charts_condition, new_page, wait_for
from transformer.charts import visible_token
from transformer.decode import DecodeResult
from transformer.store import list_checkpoints
from ui.server import preferred_default

TOP_K = 5  # the Decode page's default


def default_model(checkpoints: Path) -> str:
    """The checkpoint the app opens on (same rule as the app)."""
    name = preferred_default([p.name for p in list_checkpoints(checkpoints)])
    if name is None:
        raise FileNotFoundError(f"no checkpoints in {checkpoints}")
    return name


def topk_texts(result: DecodeResult, t: int) -> tuple[str, ...]:
    """What the top-k bars of step t (1-based) write: the percentages beside the bars, in order, then each candidate
    token. The tokens are checked one by one: when the data is swapped in place, Vega keeps the SVG nodes of the
    token axis's labels and moves them, so after Prev their document order need not be the bars' order (found in
    session 7: the bench stopped at "prev did not show step 7" while the page showed step 7 correctly)."""
    top_k = result.steps[t - 1].top_k
    return " | ".join(f"{100 * p:.1f}%" for _, p in top_k), *(visible_token(tok) for tok, _ in top_k)


def first_page_ms(browser: Any, url: str) -> float:
    """Navigation start to the first chart drawn on an idle page, in a new session."""
    page = new_page(browser)
    try:
        page.goto(url)
        return wait_for(page, charts_condition("", 1), timeout_ms=120_000).drawn_at
    finally:
        page.context.close()
