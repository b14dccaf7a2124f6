"""Screenshots for docs/why-it-looks-there.md at 1280 px, from the real app in headless Chromium: the Attention
page's "What made this score" (the QK table) on the shipped default model, the composition maps of the shipped
induction model (its K tab: the induction head's keys reading the previous-token head), and Decode's route graph
and source-or-prefix view at one step.

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.why [--out docs/screenshots]
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.screenshots.pages import screenshot_app
from studio_browser import new_page, wait_charts, wait_idle

SIZE = {"width": 1280, "height": 720}
TEXT = "A man in a blue shirt is riding a bike."
REPEATED = "qXk3Bw7pLmZ2aRt9qXk3Bw7pLm"


def _shot(page: Any, key: str, path: Path) -> None:
    wait_idle(page, 120_000)
    page.set_viewport_size({"width": SIZE["width"], "height": 4000})  # every chart in view, so each is drawn
    page.wait_for_timeout(3000)
    page.mouse.move(SIZE["width"] - 5, 5)  # off the charts: no hover toolbar in the picture
    page.locator(f".st-key-{key}").screenshot(path=str(path))
    page.set_viewport_size(SIZE)


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        page = new_page(browser)
        try:
            _pictures(page, server, out)
        except Exception:
            page.screenshot(path=str(out / "why_failed.png"), full_page=True)  # what the page showed instead
            raise
    print(f"wrote qk_table.png, composition.png, route_graph.png, source_or_prefix.png to {out}")


def _pictures(page: Any, server: Any, out: Path) -> None:
    """The four pictures, each view opened by its link or a click."""
    page.set_viewport_size(SIZE)
    page.goto(f"{server.url}/attention?text={TEXT}&layer=1&head=2&qkq=4&qkk=3")
    wait_charts(page, r"Score by query part", 1, timeout_ms=180_000)
    _shot(page, "attention_qk_open", out / "qk_table.png")
    page.goto(f"{server.url}/attention?model=shipped:induction&text={REPEATED}&layer=2&head=2")
    wait_charts(page, r"layer 2 · head 2", 1, timeout_ms=180_000)
    page.locator(".st-key-attention_composition_open summary").click()
    wait_charts(page, r"K-composition|Q-composition", 1, timeout_ms=180_000)
    page.get_by_role("tab", name="K (keys read it)").click()  # the keys' side of the induction circuit
    wait_charts(page, r"K-composition", 1, timeout_ms=180_000)
    _shot(page, "attention_composition_open", out / "composition.png")
    page.goto(f"{server.url}/decode?text={TEXT}&step=3&tau=0.04")
    wait_charts(page, r"· step 3 →", 1, timeout_ms=180_000)
    _shot(page, "decode_route_open", out / "route_graph.png")
    page.locator(".st-key-decode_reliance_open summary").click()
    wait_charts(page, r"Share from the source", 1, timeout_ms=180_000)
    _shot(page, "decode_reliance_open", out / "source_or_prefix.png")


if __name__ == "__main__":
    main()
