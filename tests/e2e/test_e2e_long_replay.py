"""A long input's replay page in Chromium, offline: it draws the step's row, the overview and the region, steps
with the arrow keys and Next, switches heads, and asks nothing of any server."""
from __future__ import annotations

from tests.helpers.hf_causal_models import build, lines
from transformer.charts import replay_html
from transformer.decode import greedy_decode
from transformer.store import open_model

STATE = "([step, head]) => document.body.dataset.drawnStep === String(step) && document.body.dataset.drawnHead === " \
        "String(head)"


def test_the_long_replay_steps_and_switches_heads_offline(tmp_path, browser):
    result = greedy_decode(open_model(str(build("qwen2", tmp_path / "qwen2"))), "\n".join(lines(24)), max_steps=4,
                           keep="store")
    n = result.trace.store.layer("self", 1).n_keys
    path = tmp_path / "replay.html"
    path.write_text(replay_html(result, "qwen2-long", layer=1, region=(n - 300, n - 20, 5, 290)),
                    encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_offline(True)
    page, requests, errors = context.new_page(), [], []
    page.route("**/*", lambda r: (requests.append(r.request.url),
                                  r.continue_() if r.request.url == path.as_uri() else r.abort()))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function(STATE, arg=[1, 1], timeout=60_000)
    assert page.inner_text("#step-title").startswith("Step 1 of 4: output")
    assert page.inner_text("#region-title").startswith(f"Rows {n - 300:,}–{n - 21:,} × keys 5–289: exact")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(STATE, arg=[2, 1], timeout=30_000)
    page.select_option("#head", "2")
    page.wait_for_function(STATE, arg=[2, 3], timeout=30_000)
    page.click("#next")
    page.wait_for_function(STATE, arg=[3, 3], timeout=30_000)
    assert page.inner_text("#strip-title").startswith(f"Row {result.trace.step_offset + 2:,} (step 3)")
    assert page.inner_text("#error") == "" and not errors
    assert requests == [path.as_uri()]  # the file itself, nothing else
