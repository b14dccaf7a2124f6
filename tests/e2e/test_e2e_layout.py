"""In a real browser at 1400x1000 (the window a newcomer first tried): every chart fits its column, the per-head
statistics table needs no horizontal scrolling, horizontal axis labels do not overprint each other, no label or
text is cut short with "…", and a chart's toolbar offers no PNG of its own beside the page's PNG / SVG buttons.
One server per worker (`shipped_app`) and one Chromium per worker (`browser`): each page opens in a fresh
context (its own session), and the walk over every page is one case per page, so the workers share it out."""
from __future__ import annotations

from urllib.parse import urlencode

import pytest

from studio_browser import (
    charts_condition,
    new_page,
    page_errors,
    wait_for,
    wait_idle,
)

TEXT = "the old man sees a small dog"
PAGES = [
    ("", {}, charts_condition("", 1)),
    ("decode", {"text": TEXT, "step": "7"}, charts_condition(r"step 7 · layer \d+", 2, heading="Step 7 of")),
    ("attention", {"text": TEXT}, charts_condition("Cross-attention · layer", 1)),
    ("compare", {"compare": "shipped:toy-en-de", "text": TEXT}, charts_condition("B − A", 1)),
]
# per chart: its heading, the widths of its drawing and of its column; horizontal axis labels that overprint; per
# data table (st.dataframe or a small HTML table): scroll width and visible width; texts the browser cuts with "…"
LAYOUT_JS = r"""() => {
  const out = {wider: [], overprinted: [], tables: [], cut: []};
  for (const e of document.querySelectorAll('[data-testid="stMain"] *, [data-testid="stSidebar"] *')) {
    if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth && e.textContent.trim()
        && getComputedStyle(e).textOverflow === 'ellipsis') out.cut.push(e.textContent.trim().slice(0, 40));
  }
  for (const chart of document.querySelectorAll('[data-testid="stVegaLiteChart"]')) {
    const svg = chart.querySelector('svg');
    const column = chart.closest('[data-testid="stColumn"]') || chart.closest('[data-testid="stMainBlockContainer"]');
    const box = chart.closest('[data-testid="stElementContainer"]');
    const name = (box.previousElementSibling?.textContent || '').slice(0, 60);
    const drawn = svg.getBoundingClientRect(), room = column.getBoundingClientRect();
    if (drawn.right > room.right + 1) out.wider.push([name, Math.round(drawn.width), Math.round(room.width)]);
    const labels = [...svg.querySelectorAll('.role-axis-label text')]
      .filter((t) => !/rotate\(-?[1-9]/.test(t.getAttribute('transform') || ''))
      .map((t) => t.getBoundingClientRect()).filter((r) => r.width > 0);
    labels.forEach((a, i) => labels.slice(i + 1).forEach((b) => {
      if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) {
        out.overprinted.push(name);
      }
    }));
  }
  for (const table of document.querySelectorAll('[data-testid="stDataFrame"], .studio-table')) {
    const scroller = table.querySelector('.dvn-scroller') || table;
    out.tables.push([scroller.scrollWidth, scroller.clientWidth]);
  }
  return out;
}"""

def _visible_pngs_on_hover(page) -> list[int]:
    """For each chart: how many visible controls named PNG its own element shows while the pointer is over it."""
    counts = []
    for chart in page.locator('[data-testid="stVegaLiteChart"]').all():
        if not chart.is_visible():  # in a closed expander (the head overview): nobody can point at it
            continue
        chart.scroll_into_view_if_needed()
        chart.hover()
        page.wait_for_timeout(150)
        box = chart.locator('xpath=ancestor::*[@data-testid="stElementContainer"][1]')
        counts.append(sum(1 for control in box.locator("button, a").all()
                          if control.is_visible() and "png" in ((control.get_attribute("aria-label") or "")
                                                                + control.inner_text()).lower()))
    return counts


def test_charts_fit_tables_do_not_scroll_and_no_second_png_at_1400_by_1000(shipped_app, browser):
    for path, params, drawn in PAGES:
        page = new_page(browser)  # new_page sets the 1400x1000 viewport
        page.goto(f"{shipped_app.url}/{path}?{urlencode({'model': 'shipped:toy-en-de', **params})}")
        wait_for(page, drawn, 90_000)
        wait_idle(page)
        layout = page.evaluate(LAYOUT_JS)
        assert layout["wider"] == [], f"/{path}: charts wider than their column: {layout['wider']}"
        assert layout["overprinted"] == [], f"/{path}: overprinted axis labels in {layout['overprinted']}"
        assert layout["cut"] == [], f"/{path}: texts cut short: {layout['cut']}"
        if path == "attention":  # its one table here: the per-head statistics
            assert len(layout["tables"]) == 1 and layout["tables"][0][0] <= layout["tables"][0][1], layout
        assert set(_visible_pngs_on_hover(page)) <= {0}, f"/{path}: a chart toolbar offers a PNG"
        assert page_errors(page) == []
        page.context.close()


# per chart: its name, how far its drawing reaches past its room (its column, else the page's main block) and whether
# the chart's own box scrolls sideways
FIT_JS = r"""() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].map((chart) => {
  const drawing = chart.querySelector('svg, canvas');
  const column = chart.closest('[data-testid="stColumn"]');
  const room = (column || chart.closest('[data-testid="stMainBlockContainer"]')).getBoundingClientRect();
  const box = chart.closest('[data-testid="stElementContainer"]');
  const name = (box.previousElementSibling?.textContent || '').slice(0, 60);
  return [name, Math.round(drawing.getBoundingClientRect().right - room.right), !!column,
          getComputedStyle(box).overflowX === 'auto' && box.scrollWidth > box.clientWidth];
})"""
GAP_PX = 48  # a chart in a column may reach into the gap beside it, not over its neighbour


def test_a_long_input_fits_a_1280_px_window_on_every_page_that_draws_it(shipped_app, browser):
    """About 130 source tokens on the shipped Multi30k model: the maps show a window of keys across the page (Home's
    its first keys), token strips wrap within it, and what is still wider (a head grid, Compare's difference map)
    scrolls inside its own box."""
    text = " ".join(["Two young children in blue shirts are playing soccer on a green field near the old church."] * 6)
    views = [("", {}, charts_condition("", 1), False),  # Home: the map's first keys, said in its title
             ("decode", {}, charts_condition(r"step 1\b", 3, heading="Step 1 of"), True),
             ("attention", {}, charts_condition("Cross-attention · layer", 1), True),
             # (its difference map of ~2,400 cells draws on canvas: no text to wait for, so any two charts drawn)
             ("compare", {"compare": "shipped:multi30k-en-de"}, charts_condition("", 2), True)]
    for path, params, drawn, windowed in views:
        page = new_page(browser)
        page.set_viewport_size({"width": 1280, "height": 800})
        query = urlencode({"model": "shipped:multi30k-en-de", "text": text, **params})
        page.goto(f"{shipped_app.url}/{path}?{query}")
        wait_for(page, drawn, 90_000)
        wait_idle(page)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280
        if windowed:
            assert page.get_by_text("Keys shown (of").count() >= 1, f"/{path}: no window of keys"
        for name, past, in_column, scrolls in page.evaluate(FIT_JS):
            if in_column:
                assert past <= GAP_PX, f"/{path}: {name!r} reaches {past} px past its column"
            else:
                assert past <= 1 or scrolls, f"/{path}: {name!r} is cut {past} px past the page"
        assert page_errors(page) == []
        page.context.close()


# The layout check (tests/e2e/layout_check.py) on every page with every expander open (the logit lens, Inside this
# head, the patching maps and the ablation sweep among them): at a projector's 1280x720, in presenter mode at
# 1920x1080, on the shipped default model and on a model of bart-large's shape. One case per page and walk.
LEARN_STAGES = [f"learn?stage={i}" for i in range(1, 10)]
OPENED = ["decode?enc_layer=1",  # the logit lens open (reading encoder layer 1)
          "attention?query=3",  # Inside this head, at query 3
          "compare?cmode=edit&edit=the+old+woman+sees+a+small+dog"]  # edit and compare: the patching maps
EVERY_PAGE = ["", "decode", "attention", "compare", *OPENED, *LEARN_STAGES, "train", "head"]
# the analyses a page draws only once asked for: per page, the button to press and what shows the analysis drew (at
# 1280x720 on the shipped model; bart-large's shape sweeps 576 heads, a minute)
STARTED = {"attention": [("Ablate each head in turn", "log p(output) intact")],  # the sweep's maps
           OPENED[2]: [("Patch every site (exact)", "[class*='st-key-compare_patch_map_']")]}  # the patching maps
INPUT_PAGES = {"", "decode", "attention", "compare"}
WALKS = [  # (model, viewport, presenter mode, pages)
    ("shipped:multi30k-en-de", (1280, 720), False, EVERY_PAGE),
    ("shipped:multi30k-en-de", (1920, 1080), True, ["", "decode", "attention", "compare", *LEARN_STAGES[:3], "train"]),
    ("hf:bart-large-heads", (1280, 720), False, ["", "decode", "attention", "learn?stage=1", "learn?stage=3", "head"]),
]


def _open_checked(browser, url: str, size: tuple[int, int], started: list[tuple[str, str]]) -> dict:
    """The layout check's findings on `url` at `size`, once the page is drawn with the analyses of `started` run
    (button, a text or CSS selector of its result) and every expander open."""
    from tests.e2e.layout_check import LAYOUT_CHECK_JS, OPEN_EXPANDERS_JS

    page = new_page(browser)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(url)
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=120_000)
    wait_idle(page, 120_000)
    for button, drawn in started:
        page.get_by_role("button", name=button).click()
        (page.locator(drawn) if drawn.startswith("[") else page.get_by_text(drawn)).first.wait_for(timeout=120_000)
        wait_idle(page, 120_000)
    for _ in range(3):  # an expander's content may hold expanders of its own
        if not page.evaluate(OPEN_EXPANDERS_JS):
            break
        page.wait_for_timeout(300)
        wait_idle(page, 120_000)
    found = page.evaluate(LAYOUT_CHECK_JS)
    if any(found.values()):  # a chart still being laid out after the last rerun: what holds a second later counts
        page.wait_for_timeout(1000)
        wait_idle(page, 120_000)
        found = page.evaluate(LAYOUT_CHECK_JS)
    found["errors"] = page_errors(page)
    page.context.close()
    return found


WALK_CASES = [pytest.param(model, size, present, path,
                           id=f"{model.split(':')[1]}-{size[0]}x{size[1]}{'-presenting' if present else ''}-/{path}")
              for model, size, present, pages in WALKS for path in pages]


@pytest.mark.parametrize(("model", "size", "present", "path"), WALK_CASES)
def test_no_overlap_cut_label_overwide_chart_or_stray_legend_on_any_page(shipped_app, browser, model, size,
                                                                          present, path):
    query = {"model": model, **({"text": TEXT} if path.split("?")[0] in INPUT_PAGES else {}),
             **({"present": "1"} if present else {})}
    url = f"{shipped_app.url}/{path}{'&' if '?' in path else '?'}{urlencode(query)}"
    started = STARTED.get(path, []) if (model, size) == WALKS[0][:2] else []
    found = _open_checked(browser, url, size, started)
    problems = [f"{what}: {found[what][:4]}" for what in found if found[what]]
    assert problems == [], "\n".join(problems)


# A model of Qwen2-0.5B's heads (14 a layer, 4 layers, a tiny width) under a long document at 1280x720: the document
# typed into Decode's own box and decoded, then Decode's and Attention's views of it (the overview, the zoom, the
# row's views) within the page, nothing overlapping; then presenter mode at 1280x720 on the shipped model with ~40
# target tokens: each page's map within its column and the screen.
LONG_TEXT = ("Two young children in blue shirts and a man in a red hat are playing soccer on a green field near the "
             "old church while their parents and a small brown dog watch them from a wooden bench.")


def _layout_found(page) -> dict:
    from tests.e2e.layout_check import LAYOUT_CHECK_JS

    wait_idle(page, 120_000)
    page.wait_for_timeout(800)  # a chart laid out after the last rerun
    wait_idle(page, 120_000)
    return {what: boxes for what, boxes in page.evaluate(LAYOUT_CHECK_JS).items() if boxes}


def test_14_heads_under_a_document_and_presenter_maps_fit_their_columns_and_the_screen(shipped_app, browser):
    import re

    from tests.e2e.test_e2e_presenter import FIRST_SCREEN_JS
    from tests.helpers.hf_causal_models import lines

    page = new_page(browser)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.set_default_timeout(180_000)
    page.goto(f"{shipped_app.url}/decode?model=hf:qwen2-14-heads")
    box = page.locator(".st-key-decode_text textarea")  # the page's own box: a document
    box.fill("\n".join(lines(30)))
    box.press("Control+Enter")
    page.locator(".st-key-document_job_run button").click()
    page.get_by_text(re.compile(r"^Layer \d+'s heads over all")).wait_for()
    page.wait_for_url(re.compile(r"[?&]zoom="))
    page.get_by_text(re.compile(r"^Top contributions of row")).first.wait_for(state="attached")
    assert _layout_found(page) == {}, "Decode under a document"
    page.goto(page.url.replace("/decode?", "/attention?"))  # the document's link: decode and pass kept
    page.locator(".st-key-map_overview :is(svg.marks, canvas)").first.wait_for(state="attached")
    page.get_by_text(re.compile(r"^Top contributions of row")).first.wait_for(state="attached")
    assert _layout_found(page) == {}, "Attention under a document"
    assert page_errors(page) == []
    page.context.close()
    for path in ("decode", "attention"):
        page = new_page(browser)
        page.set_viewport_size({"width": 1280, "height": 720})
        query = urlencode({"model": "shipped:multi30k-en-de", "text": LONG_TEXT, "present": "1"})
        page.goto(f"{shipped_app.url}/{path}?{query}")
        page.locator('[data-testid="stVegaLiteChart"] :is(svg.marks, canvas)').first.wait_for(timeout=120_000)
        found = _layout_found(page)
        assert found == {}, f"/{path} presenting at 1280x720: {found}"
        [box] = page.evaluate(FIRST_SCREEN_JS, ["rows up to step" if path == "decode" else None])["boxes"]
        assert box is not None and 0 <= box[0] and box[2] <= 1280 and box[3] <= 720, f"/{path}: the map {box}"
        assert page_errors(page) == []
        page.context.close()
