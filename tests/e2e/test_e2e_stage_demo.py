"""In a real browser at a projector's 1280x720: the Train page shows the task, the stage demo switch and the Train
button without scrolling, every hyperparameter is one click away, and the stage demo starts from there."""
from __future__ import annotations

import re

from studio_browser import new_page, page_errors, wait_idle

IN_VIEW_JS = r"""keys => keys.map(key => {
  const e = document.querySelector('.st-key-' + key);
  if (!e) return [key, null];
  const box = e.getBoundingClientRect();
  return [key, [Math.round(box.left), Math.round(box.top), Math.round(box.right), Math.round(box.bottom)]];
})"""
ON_STAGE = ("train_task", "train_stage", "train_start")


def test_the_train_button_and_the_stage_demo_need_no_scrolling_at_1280x720(server, browser):
    page = new_page(browser)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{server.url}/train")
    page.locator(".st-key-train_start button").wait_for(timeout=90_000)
    wait_idle(page)
    assert page.evaluate("() => window.scrollY") == 0
    for key, box in page.evaluate(IN_VIEW_JS, list(ON_STAGE)):
        assert box is not None, f"{key} is not on the page"
        left, top, right, bottom = box
        assert 0 <= left and right <= 1280 and 0 <= top and bottom <= 720, f"{key} is out of view: {box}"
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280
    lr = page.locator(".st-key-train_lr input")
    assert not lr.is_visible()  # the hyperparameters wait in their expander ...
    page.locator(".st-key-train_settings_open summary").click()
    lr.wait_for(state="visible")  # ... one click away

    page.locator(".st-key-train_stage label").click()  # the stage demo fills in its recipe
    page.wait_for_function("() => document.querySelector('.st-key-train_max_seconds input')?.value === '300'",
                           timeout=60_000)
    page.get_by_text(re.compile("^Stage demo: trains until the picture is clean")).wait_for()
    for key, value in {"train_max_steps": 5, "train_n_train": 300, "train_batch_size": 16}.items():
        field = page.locator(f".st-key-{key} input")
        field.fill(str(value))
        field.press("Tab")
    page.locator(".st-key-train_start button").click()
    page.get_by_text(re.compile(r"the picture is not clean yet at step 5")).wait_for(timeout=120_000)
    assert page_errors(page) == []
    assert "Traceback" not in server.log_text()
