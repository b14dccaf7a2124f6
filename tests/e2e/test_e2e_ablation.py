"""End to end in a real browser: a click on a head's panel in the all-heads grid switches that head off.

AppTest cannot click inside a Vega chart, so this is the one test of the click itself: headless Chromium clicks a
panel of the Attention page's model view and of the Decode page's grid, and the ablated run appears beside the intact
one; a second click on the same panel switches the head back on.
"""
from __future__ import annotations

import re

from studio_browser import (
    choose,
    new_page,
    open_page,
    page_errors,
    wait_charts,
)
from tests.helpers import ARTIFACTS, ROOT

TINY = "shipped:tiny"  # the tiny checkpoint (2 layers, 2 heads) beside the shipped ones in `shipped_app`
TEXT = "abcdefg"
WITHOUT = re.compile(r"^Without Cross L1 H2$")


def _panel(page, key_prefix: str, panel: str):
    """A cell of the grid's panel `panel` ('L1 H2'): Vega's SVG marks carry their tooltip fields as aria-label (a
    facet grid's cells), or the panel's name (a panel drawn as an image)."""
    grid = f"[class*='st-key-{key_prefix}_']"
    return page.locator(f"{grid} path[aria-label*='panel: {panel};'], {grid} image[aria-label='{panel}']").first


def _selection(page, key: str) -> list[str]:
    """The chips of a multiselect, as the page shows them."""
    return [t.strip() for t in page.locator(f".st-key-{key} [data-tag] span[title]").all_inner_texts()]


def test_clicking_a_head_panel_switches_it_off_and_on_again(shipped_app, browser):
    app, logged = shipped_app, len(shipped_app.log_text())  # the server's log before this test
    page = new_page(browser)
    # each wait is for what the user sees next (the panel to click, the address bar, a text), never for the
    # whole page to be idle at once: under three workers a page's charts may keep it busy past any fixed
    # time while the element the next step needs is already there
    page.set_default_timeout(120_000)
    page.goto(f"{app.url}/?model={TINY}")  # the model stays picked on the pages opened from the sidebar
    page.get_by_role("heading", name="Attention Studio").wait_for()
    open_page(page, "Attention", timeout_ms=120_000)
    page.wait_for_url(re.compile(r"[?&]text="))  # the page's first run ended (else it may reset the box)
    box = page.locator(".st-key-attention_text input")
    box.fill(TEXT)
    box.press("Enter")
    page.wait_for_url(re.compile(rf"[?&]text={TEXT}(&|$)"))  # the typed input's run ended: its link
    page.locator(".st-key-attention_grid_click").get_by_text("switches its head off").click()
    _panel(page, "attention_grid_ablate", "L1 H2").click()  # (waits for the model view's panels)
    page.get_by_text(WITHOUT).wait_for()  # the ablated run beside the intact one
    page.get_by_text(re.compile(r"^(The outputs first differ at step \d+|Same output with these heads "
                                r"switched off)")).wait_for()
    assert _selection(page, "attention_ablate") == ["Cross L1 H2"]  # the multiselect shows the click
    _panel(page, "attention_grid_ablate", "L1 H2 · off").wait_for()  # the grid marks the head off
    page.wait_for_url(re.compile(r"[?&]ablate=cross\.L1H2(&|$)"))  # and the link carries it
    assert page_errors(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("[class*='st-key-attention_grid_ablate_']").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e_grid_click_ablation.png"))
    _panel(page, "attention_grid_ablate", "L1 H2 · off").click()  # again: back on
    page.get_by_text(WITHOUT).wait_for(state="detached")
    assert _selection(page, "attention_ablate") == []
    _panel(page, "attention_grid_ablate", "L1 H2").wait_for()  # the grid redrawn with the head on again
    _panel(page, "attention_grid_ablate", "L1 mean").click()  # the mean is no head
    page.get_by_text(re.compile("not one head")).wait_for()
    assert _selection(page, "attention_ablate") == []

    open_page(page, "Decode", timeout_ms=120_000)  # the Decode page's grid of the current layer's heads
    choose(page, "decode_layer", "Layer 1")
    _panel(page, "decode_grid", "L1 H2").click()  # (waits for layer 1's grid)
    page.get_by_text(WITHOUT).wait_for()
    assert _selection(page, "decode_ablate") == ["Cross L1 H2"]
    assert page_errors(page) == []
    assert "Traceback" not in app.log_text()[logged:]


SHIPPED = ROOT / "checkpoints"


def test_every_shipped_model_ablates_a_clicked_head_and_attributes_a_step_in_the_browser(shipped_app, browser):
    """Head ablation and attribution on every shipped model in a real browser. Each model is opened by its
    link on Decode; a click on its layer-1 grid's head 1 switches that head off, and the attribution strip of step 1
    is drawn once its expander is opened."""
    from transformer.model import family_of
    from transformer.store import checkpoint_family
    from ui.models.catalog import PAGE_FAMILIES
    names = sorted(p.name for p in SHIPPED.iterdir()  # the models the app lists (families its pages draw)
                   if (p / "config.json").is_file() and checkpoint_family(p) in PAGE_FAMILIES)
    assert {"reverse", "sort", "toy-en-de", "multi30k-en-de"} <= set(names)
    app, logged = shipped_app, len(shipped_app.log_text())  # the app on SHIPPED; its log before this test
    for name in names:
        if family_of(checkpoint_family(SHIPPED / name)).cross_kind is None:
            continue  # its grid (more rows at step 1: the prompt's) draws on canvas: no SVG panel to locate
        page = new_page(browser)  # a fresh session per model
        page.set_default_timeout(120_000)
        page.goto(f"{app.url}/decode?model=shipped:{name}&layer=1")
        page.get_by_role("heading", name=re.compile(r"^Step 1 of \d+")).wait_for()
        _panel(page, "decode_grid", "L1 H1").click()
        page.get_by_text(re.compile(r"^Without Cross L1 H1$")).wait_for()
        page.locator(".st-key-decode_attr_open summary").click()
        wait_charts(page, r"Integrated Gradients attribution to step 1's output", 1, timeout_ms=120_000)
        assert page_errors(page) == [], name
        if name == "multi30k-en-de":
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "e2e_shipped_ablation_attribution.png"), full_page=True)
        page.context.close()
    assert "Traceback" not in app.log_text()[logged:]
