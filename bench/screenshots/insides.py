"""Screenshots for docs/head-computation.md at presenter size (1280x720, presenter mode), from the real app in
headless Chromium on the shipped default model: the Attention page's "Inside this head", its line view, and the Learn
tour at its cross-attention stage (the first step's query over the source: weights and contributions).

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.insides [--out docs/screenshots]
"""
from __future__ import annotations

from bench.screenshots.pages import screenshot_app
from studio_browser import new_page, wait_charts, wait_idle
from ui.views import TOUR

SIZE = {"width": 1280, "height": 720}
TEXT = "A man in a blue shirt is riding a bike."


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        page = new_page(browser)
        page.set_viewport_size(SIZE)
        page.goto(f"{server.url}/attention?text={TEXT}&layer=1&head=2&present=1")
        wait_charts(page, r"Cross-attention · layer 1 · head 2", 1, timeout_ms=120_000)
        page.locator(".st-key-attention_inside_open summary").click()
        wait_charts(page, r"Softmax", 1, timeout_ms=120_000)
        wait_idle(page, 60_000)
        page.set_viewport_size({"width": SIZE["width"], "height": 4000})  # every chart in view, so each is drawn
        page.wait_for_timeout(3000)
        page.locator(".st-key-attention_inside_open").screenshot(path=str(out / "head_computation.png"))
        page.locator(".st-key-attention_lines_open summary").click()
        wait_charts(page, r"line view", 1, timeout_ms=120_000)
        wait_idle(page, 60_000)
        page.wait_for_timeout(2000)
        page.locator(".st-key-attention_lines_open").screenshot(path=str(out / "line_view.png"))
        page.set_viewport_size(SIZE)
        page.goto(f"{server.url}/learn?text={TEXT}&present=1")
        wait_charts(page, r"Query vector", 1, timeout_ms=120_000)
        for stage in TOUR[1:7]:  # up to "7 · Cross-attention"
            page.locator(".st-key-learn_next button").click()
            page.get_by_role("heading", name=stage.title).wait_for(timeout=60_000)
            wait_idle(page, 60_000)
        wait_charts(page, r"What each key contributes", 1, timeout_ms=60_000)
        # the tour's buttons at the top of the window, the stage below them (the title and input scrolled away)
        page.locator(".st-key-learn_prev").evaluate("e => e.scrollIntoView({block: 'start'})")
        page.mouse.move(SIZE["width"] - 20, SIZE["height"] - 10)  # off the charts: no hover toolbar in the picture
        page.wait_for_timeout(2000)
        page.screenshot(path=str(out / "learn_tour.png"))
    print(f"wrote head_computation.png, line_view.png, learn_tour.png to {out}")


if __name__ == "__main__":
    main()
