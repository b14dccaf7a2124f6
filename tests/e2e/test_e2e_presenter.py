"""In a real browser, presenter mode's QR code has a margin of its own: at a projector's 1280x720 and at 1400x1000,
on Decode (its Attribution row included) and Attention, no chart or control reaches under it, at any scroll position,
and the page needs no sideways scrolling for it."""
from __future__ import annotations

from urllib.parse import urlencode

import pytest

from studio_browser import charts_condition, new_page, page_errors, wait_for, wait_idle

TINY = "shipped:tiny"  # the tiny checkpoint (2 layers, 2 heads) beside the shipped ones in `shipped_app`
TEXT = "abcdefg"
# the QR code's box, and every element of the page's content whose box reaches into the QR code's columns (rows do
# not matter: the code is fixed while the page scrolls under it)
UNDER_QR_JS = r"""() => {
  const qr = document.querySelector('.st-key-studio_present_qr');
  if (!qr) return null;
  const code = qr.getBoundingClientRect();
  const under = [];
  for (const e of document.querySelectorAll('[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"],'
                                            + ' [data-testid="stMainBlockContainer"] [data-testid="stExpander"]')) {
    if (qr.contains(e)) continue;
    const box = e.getBoundingClientRect();
    if (box.width > 0 && box.height > 0 && box.right > code.left) {
      under.push([(e.getAttribute('class') || '').match(/st-key-\S+/)?.[0] || e.textContent.trim().slice(0, 40),
                  Math.round(box.right), Math.round(code.left)]);
    }
  }
  return {code: [code.left, code.top, code.right, code.bottom], under: under,
          width: document.documentElement.scrollWidth, caption: qr.innerText};
}"""
VIEWS = [("decode", charts_condition(r"step 1\b", 2, heading="Step 1 of")),
         ("attention", charts_condition("Cross-attention · layer", 1))]


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1400, 1000)])
def test_the_qr_code_covers_no_chart_or_control(shipped_app, width, height, browser):
    for path, drawn in VIEWS:
        page = new_page(browser)
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{shipped_app.url}/{path}?model={TINY}&text={TEXT}&present=1")
        wait_for(page, drawn, 90_000)
        if path == "decode":  # the row the code used to cover: Attribution, opened
            page.get_by_text("Attribution: what the chosen token depends on").click()
            page.get_by_text("Integrated Gradients").first.wait_for(timeout=60_000)
        wait_idle(page)
        page.locator(".st-key-studio_present_qr img").wait_for()
        found = page.evaluate(UNDER_QR_JS)
        left, top, right, bottom = found["code"]
        assert 0 <= left and right <= width and 0 <= top and bottom <= height, found  # in view
        assert found["under"] == [], f"/{path} at {width}x{height}: under the QR code: {found['under']}"
        assert found["width"] <= width, f"/{path}: the page scrolls sideways"
        assert "Scan to open this view" in found["caption"] and ":" in found["caption"]  # and its address
        assert page_errors(page) == []
        page.context.close()


# A talk in presenter mode at a projector's 1280x720: Home -> Decode -> Attention -> Learn -> Train through the bar's
# page strip and the clicker's page keys, never leaving presenter mode, each title below the bar; each page's main
# picture within the first screen, the controls folded (Decode: the top-k bars and the cross-attention map;
# Attention: the large map with its axis title); then Decode and Attention again at 1920x1080.
# the main pictures: the first chart after a heading that reads so (None: the page's first chart); Decode's are its
# top-k bars and its cross-attention map, side by side under the folded controls.
MAIN = {"Home": [None], "Decode": ["candidates at step", "rows up to step"], "Attention": [None], "Learn": [None],
        "Train": []}
WALK = ["Home", "Decode", "Attention", "Learn", "Train"]
REVERSE = {"model": "shipped:reverse", "text": "attentionisall", "kind": "cross", "layer": "1", "head": "4",
           "present": "1"}
# a prompt of 60 characters: the induction model's map has 64 rows (8-px cells made it 512 px tall, past 720)
LONG = {"model": "shipped:induction", "text": "Kx7Qm2PzLw9RtB4nVc8HjD3fGs6YkA1eUo5XiN0bKx7Qm2PzLw9RtB4nVc8H",
        "present": "1"}
FIRST_SCREEN_JS = r"""(headings) => {
  const main = document.querySelector('[data-testid="stMain"]');
  const bar = document.querySelector('.st-key-studio_present_bar');
  const title = main.querySelector('h1');
  const drawn = '[data-testid="stVegaLiteChart"] svg, [data-testid="stVegaLiteChart"] canvas';
  const after = (heading) => {  // the first chart after an element whose text holds `heading`
    let seen = false;
    for (const e of main.querySelectorAll('[data-testid="stElementContainer"]')) {
      const chart = e.querySelector(drawn);
      if (seen && chart) return chart;
      if (!chart && e.innerText.includes(heading)) seen = true;
    }
    return null;
  };
  const boxes = headings.map((heading) => {
    const chart = heading ? after(heading) : main.querySelector(drawn);
    const r = chart && chart.getBoundingClientRect();
    return r && [Math.round(r.left), Math.round(r.top), Math.round(r.right), Math.round(r.bottom)];
  });
  return {presenting: !!bar && !document.querySelector('[data-testid="stSidebar"]')?.offsetWidth, boxes,
          title: title && Math.round(title.getBoundingClientRect().top),
          bar: bar && Math.round(bar.getBoundingClientRect().bottom),
          url: location.href};
}"""


# the bar's links, buttons and texts drawn outside the bar or under the QR code (the page keys' hidden buttons,
# parked off the screen, aside), and whether the way out's key is drawn as a key cap (a bare "P" after "Leave" read as
# a label cut short)
BAR_JS = r"""() => {
  const bar = document.querySelector('.st-key-studio_present_bar').getBoundingClientRect();
  const qr = document.querySelector('.st-key-studio_present_qr')?.getBoundingClientRect();
  const outside = [];
  for (const e of document.querySelectorAll('.st-key-studio_present_bar :is(a, button, p, kbd)')) {
    const r = e.getBoundingClientRect();
    if (r.width < 1 || r.right < 0) continue;
    if (r.left < bar.left - 1 || r.right > bar.right + 1 || (qr && r.right > qr.left && r.top < qr.bottom))
      outside.push([e.textContent.trim().slice(0, 30), Math.round(r.left), Math.round(r.right)]);
  }
  const key = document.querySelector('.st-key-studio_present_leave kbd');
  return {outside, keyCap: !!key && getComputedStyle(key).borderTopStyle === 'solid', barRight: Math.round(bar.right),
          qrLeft: qr && Math.round(qr.left)};
}"""


def _main_pictures_seen(page, title: str, width: int, height: int) -> None:
    """The page `title` is drawn in presenter mode, its title below the bar, its main pictures in the first screen,
    the bar whole and clear of the QR code, and the layout check clean (a screenshot in /tmp to look at)."""
    from tests.e2e.layout_check import LAYOUT_CHECK_JS

    if title != "Train":
        page.locator('[data-testid="stVegaLiteChart"] svg, [data-testid="stVegaLiteChart"] canvas'
                     ).first.wait_for(timeout=60_000)
        wait_idle(page, 120_000)
    page.screenshot(path=f"/tmp/presenter_walk_{width}x{height}_{title.lower()}.png")
    seen = page.evaluate(FIRST_SCREEN_JS, MAIN[title])
    assert seen["presenting"] and "present=1" in seen["url"], f"{title}: presenter mode left: {seen}"
    assert seen["title"] is not None and seen["title"] >= seen["bar"], f"{title}: title under the bar"
    for box in seen["boxes"]:
        assert box is not None, f"{title}: a main picture is missing: {seen}"
        left, top, right, bottom = box
        assert 0 <= left and right <= width and 0 <= top and bottom <= height, (title, width, height, seen)
    bar = page.evaluate(BAR_JS)
    assert bar["outside"] == [] and bar["keyCap"], f"{title} at {width}x{height}: the bar: {bar}"
    found = {what: boxes for what, boxes in page.evaluate(LAYOUT_CHECK_JS).items() if boxes}
    assert found == {}, f"{title} at {width}x{height}: the layout check: {found}"
    assert page_errors(page) == []


def test_a_talk_walks_five_pages_in_presenter_mode_with_each_main_picture_on_the_first_screen(shipped_app, browser):
    text = "A+man+plays+the+guitar+on+a+stage."
    server = shipped_app  # the shipped checkpoints, Multi30k the default
    page = new_page(browser)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{server.url}/?text={text}&present=1")
    for i, title in enumerate(WALK):
        if i == 3:  # Attention -> Learn: the strip (Compare and Train come between)
            page.locator(".st-key-studio_present_pages a", has_text=title).click()
        elif i > 0:  # the clicker's page keys: Home -> Decode -> Attention, and Learn -> Train (before it)
            page.keyboard.press("PageUp" if title == "Train" else "PageDown")
        if i > 0:
            page.wait_for_url(f"**/{title.lower()}?*", timeout=60_000)
        page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
        wait_idle(page, 120_000)
        _main_pictures_seen(page, title, 1280, 720)
    # the reversal model's map (the docs' screenshot): a gold toggle above it, on the first screen
    page.goto(f"{server.url}/attention?{urlencode(REVERSE)}")
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
    wait_idle(page, 120_000)
    page.get_by_text("Outline the gold alignment").wait_for(timeout=60_000)
    _main_pictures_seen(page, "Attention", 1280, 720)
    for title in ("Attention", "Decode"):  # 64 rows and keys: lower and narrower cells, on the screen
        page.goto(f"{server.url}/{title.lower()}?{urlencode(LONG)}")
        page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
        _main_pictures_seen(page, title, 1280, 720)
    page.set_viewport_size({"width": 1920, "height": 1080})  # a larger projector: the same pages fit
    for title in ("Decode", "Attention"):
        page.goto(f"{server.url}/{title.lower()}?text={text}&present=1")
        page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
        wait_idle(page, 120_000)
        _main_pictures_seen(page, title, 1920, 1080)
