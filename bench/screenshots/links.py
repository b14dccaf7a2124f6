"""Screenshots of presenter mode (1280x720, what a projector shows) and the Compare page, opened from links.

    PYTHONPATH=. .venv/bin/python -m bench.screenshots.links [--out docs/screenshots]

Writes presenter_decode.png (toy-en-de, step 4, layer 2 head 2), presenter_attention.png (the reversal
anti-diagonal, L1 H4) and compare.png (the Compare page, toy-en-de against itself: no divergence, a zero
difference). Every view is an ordinary link, the same a user can copy.
"""
from __future__ import annotations

from urllib.parse import urlencode

from bench.screenshots.pages import full_page, screenshot_app
from studio_browser import PAGE_SETUP_JS, charts_condition, wait_for, wait_idle

PROJECTOR = {"width": 1280, "height": 720}
VIEWS = (
    ("presenter_decode.png", "decode", {"model": "shipped:toy-en-de", "text": "the clever woman reads a book",
                                        "step": "4", "layer": "2", "head": "2", "present": "1"},
     charts_condition(r"step 4 · layer 2 · head 2\b", 2, heading="Step 4 of")),
    ("presenter_attention.png", "attention", {"model": "shipped:reverse", "text": "attentionisall", "kind": "cross",
                                              "layer": "1", "head": "4", "present": "1"},
     charts_condition(r"Cross-attention · layer 1 · head 4\b", 1)),
)
COMPARE = ("compare.png", "compare", {"model": "shipped:toy-en-de", "compare": "shipped:toy-en-de",
                                      "text": "the old man sees a small dog", "kind": "cross", "layer": "2",
                                      "head": "2"}, charts_condition(r"B − A", 1))


def main() -> None:
    with screenshot_app(__doc__.splitlines()[0]) as (out, server, browser):
        for name, page_path, params, condition in (*VIEWS, COMPARE):
            context = browser.new_context(viewport=PROJECTOR if name.startswith("presenter") else
                                          {"width": 1440, "height": 1000})
            context.add_init_script(PAGE_SETUP_JS)
            page = context.new_page()
            page.goto(f"{server.url}/{page_path}?{urlencode(params)}")
            wait_for(page, condition, timeout_ms=120_000)
            if name.startswith("presenter"):
                page.wait_for_timeout(600)
                wait_idle(page)
                page.screenshot(path=str(out / name))  # the projector's frame, not the whole page
            else:
                full_page(page, out / name)
            context.close()
    print(f"wrote {', '.join(v[0] for v in (*VIEWS, COMPARE))} to {out}")


if __name__ == "__main__":
    main()
