"""The replay page in a real browser with every network request refused: it draws, steps and runs no user text."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import ROOT
from transformer.adapters import adapter_for
from transformer.charts import replay_html
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint

PAYLOAD = "abc</script><script>alert(1)</script><img src=x onerror=alert(2)>"
DRAWN = "n => document.body.dataset.drawnStep === String(n)"


@pytest.fixture(scope="module")
def replay_file(tiny_checkpoint_dir, tmp_path_factory) -> Path:
    """A replay of the tiny model's decode of a sentence that tries to run script, written to a file."""
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    result = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), "abcdefg")
    assert len(result.steps) >= 4, "the tiny model's output is too short to step through"
    trace = replace(result.trace, source_tokens=(PAYLOAD, *result.trace.source_tokens[1:]))  # a token too
    result = replace(result, source_text=PAYLOAD, trace=trace)
    path = tmp_path_factory.mktemp("replay") / "replay.html"
    path.write_text(replay_html(result, "reverse <b>tiny</b>", "Weights of step 5 (last)"), encoding="utf-8")
    return path


@pytest.fixture
def offline_page(replay_file, browser):
    """The replay opened in Chromium, offline, every request but the file itself aborted; what happened is kept."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    context.set_offline(True)
    page = context.new_page()
    page.seen = {"requests": [], "dialogs": [], "errors": []}
    url = replay_file.as_uri()

    def route(r):
        page.seen["requests"].append(r.request.url)
        r.continue_() if r.request.url == url else r.abort()

    page.route("**/*", route)
    page.on("dialog", lambda d: (page.seen["dialogs"].append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: page.seen["errors"].append(str(e)))
    page.goto(url)
    try:
        page.wait_for_function(DRAWN, arg=1, timeout=30_000)
    except PlaywrightTimeout:
        pytest.fail(f"the replay did not draw; dialogs {page.seen['dialogs']}, errors {page.seen['errors']}")
    return page


def _drawn(page) -> dict:
    """What the charts hold now: the heatmap's query rows, the top-k tokens and the step heading."""
    return page.evaluate("""() => ({
        rows: [...new Set(replay.views.heat.data('heat').map(d => d.query_index))],
        weights: replay.views.heat.data('heat').map(d => d.weight),
        topk: replay.views.topk.data('topk').map(d => d.token),
        title: document.getElementById('step-title').textContent,
        chips: document.querySelectorAll('#chips .chip').length,
        error: document.getElementById('error').textContent})""")


def test_the_replay_steps_through_with_next_and_the_arrow_keys_offline(offline_page):
    page = offline_page
    steps = page.evaluate("replay.data.steps")
    first = _drawn(page)
    assert first["rows"] == [0] and first["chips"] == 1 and first["title"].startswith(f"Step 1 of {len(steps)}")
    assert first["topk"][0] == steps[0]["topk"][0]["token"]
    page.click("#next")
    page.wait_for_function(DRAWN, arg=2)
    second = _drawn(page)
    assert second["rows"] == [0, 1] and second["chips"] == 2 and second["title"].startswith("Step 2 of")
    assert second["topk"] == [row["token"] for row in steps[1]["topk"]]
    page.keyboard.press("ArrowRight")
    page.wait_for_function(DRAWN, arg=3)
    assert _drawn(page)["rows"] == [0, 1, 2]
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(DRAWN, arg=2)
    assert _drawn(page)["rows"] == [0, 1]
    mean = _drawn(page)["weights"]
    page.select_option("#head", "0")  # one head instead of the mean
    page.wait_for_function("() => replay.state.head === 0 && replay.drawn >= 5")
    page.wait_for_function(DRAWN, arg=2)
    assert _drawn(page)["weights"] != mean
    page.select_option("#kind", label="Encoder self-attention")
    page.wait_for_function("() => document.body.dataset.drawnKind === 'encoder_self'")
    n_source = len(page.evaluate("replay.data.kinds[0].queries"))
    assert _drawn(page)["rows"] == list(range(n_source))  # the encoder's map does not grow with the step
    assert not page.seen["errors"] and not _drawn(page)["error"]
    assert set(page.seen["requests"]) == {page.url}  # the file itself, nothing else


def test_a_sentence_that_tries_to_run_script_is_shown_as_text(offline_page):
    page = offline_page
    assert page.text_content("#sentence") == PAYLOAD
    assert page.text_content("#model") == "reverse <b>tiny</b>"
    page.click("#next")
    page.wait_for_function(DRAWN, arg=2)
    assert page.seen["dialogs"] == [] and page.evaluate("document.querySelectorAll('img').length") == 0
    assert PAYLOAD in page.evaluate("replay.views.source.data('strip').map(d => d.token)")  # drawn as a label


def test_a_decoder_only_replay_steps_from_the_prompts_last_token(tmp_path, browser):
    """The shipped decoder-only model: step 1's row is the prompt's last token, Next adds the next row."""
    from transformer.store import open_model
    result = greedy_decode(open_model(str(ROOT / "checkpoints" /
                                          "reverse-decoder-only")), "abcdef")
    offset = result.trace.step_offset
    path = tmp_path / "replay.html"
    path.write_text(replay_html(result, "reverse-decoder-only"), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function(DRAWN, arg=1, timeout=30_000)
    first = _drawn(page)
    assert max(first["rows"]) == offset and not errors
    assert first["title"].startswith(f"Step 1 of {len(result.steps)}")
    page.click("#next")
    page.wait_for_function(DRAWN, arg=2, timeout=10_000)
    assert max(_drawn(page)["rows"]) == offset + 1 and not errors
