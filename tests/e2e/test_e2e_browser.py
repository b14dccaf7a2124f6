"""End to end in a real browser: `streamlit run app.py` driven in headless Chromium the way a person uses it."""
from __future__ import annotations

import re

import pytest

from studio_browser import (
    IDLE_JS,
    VIEW_JS,
    choose,
    decode_step_condition,
    new_page,
    open_page,
    page_errors,
    running_app,
    runs_finished,
    wait_charts,
    wait_decode_step,
    wait_for,
    wait_idle,
    wait_rerun,
)
from tests.helpers import ARTIFACTS
from transformer.adapters import adapter_for
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint
from ui.server import PAGES

CANDIDATES = ("abcdefg", "qwertyu", "hello", "mnopqrs", "zyxwv")
STEPS_WALKED = 4
TRAIN_FORM = {"train_max_steps": 40, "train_max_seconds": 120, "train_batch_size": 16, "train_n_train": 300,
              "train_eval_every": 20, "train_eval_examples": 10, "train_probe_every": 10, "train_warmup_steps": 0}


@pytest.fixture(scope="module")
def decoded(tiny_checkpoint_dir):
    """An input whose greedy output has enough steps to walk through, with what the model says at each step."""
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    for text in CANDIDATES:
        result = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text)
        if len(result.steps) > STEPS_WALKED:
            return result
    pytest.fail("the tiny checkpoint stops early on every candidate input")


def _shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"e2e_{name}.png"))


def _assert_no_errors(page) -> None:
    assert page_errors(page) == []


def _bar_labels(step) -> tuple[str]:
    """The percentages the top-k bar chart writes next to its bars, in order (as the chart's text reads)."""
    return (" | ".join(f"{100 * p:.1f}%" for _, p in step.top_k),)


def _walk_decode(page, decoded) -> None:
    open_page(page, "Decode")
    text_box = page.locator(".st-key-decode_text input")
    before = runs_finished(page)
    text_box.fill(decoded.source_text)
    text_box.press("Enter")
    wait_rerun(page, before)
    view = wait_decode_step(page, 1)
    n = len(decoded.steps)
    assert view.step == (1, n)
    assert any(" | ".join(decoded.trace.source_tokens) in chart for chart in view.charts), "typed text not charted"
    _assert_no_errors(page)
    for t in range(2, STEPS_WALKED + 1):
        step = decoded.steps[t - 1]
        page.locator(".st-key-decode_next button").click()
        view = wait_for(page, decode_step_condition(t, texts=_bar_labels(step)))  # top-k bars of step t too
        assert view.step == (t, n)
        assert f"output ‹{step.token}›" in view.heading
        assert page.locator('.st-key-decode_step [data-testid="stSliderThumbValue"]').inner_text() == str(t)
        assert view.charts_matching(rf"\bstep {t}\b") >= 3, view.charts
        assert view.charts_matching(rf"\bstep {t - 1}\b") == 0, "a chart still shows the previous step"
        assert not view.plotly, "the Decode page loads no Plotly chart"
        _assert_no_errors(page)
    _shot(page, "decode_step")

    choose(page, "decode_layer", "Layer 1")
    view = wait_charts(page, r"\blayer 1\b", 2)
    assert view.charts_matching(r"\blayer 2\b") == 0
    choose(page, "decode_head", "Head 2")
    view = wait_charts(page, r"\bhead 2\b", 2)
    assert view.charts_matching(r"\bmean of heads\b") == 0
    assert view.step == (STEPS_WALKED, n), "changing layer or head lost the step"
    _assert_no_errors(page)
    _shot(page, "decode_layer_head")
    # attribution beside attention, once its expander is opened: the strip of the current step, same source tokens
    page.locator(".st-key-decode_attr_open summary").click()
    view = wait_charts(page, rf"Integrated Gradients attribution to step {STEPS_WALKED}'s output", 1)
    tokens = " | ".join(decoded.trace.source_tokens)
    assert view.charts_matching(rf"attribution to step {STEPS_WALKED}'s output ⟫ {re.escape(tokens)}") == 1


def _attention_page(page, decoded) -> None:
    open_page(page, "Attention")
    view = wait_charts(page, r"Cross-attention · layer \d+", 1)
    tokens = " | ".join(decoded.trace.source_tokens)
    assert any(tokens in chart for chart in view.charts), "the Attention page does not show the typed input"
    wait_charts(page, r"heads and mean", 1)
    _assert_no_errors(page)
    _shot(page, "attention")
    # switch a head off: the ablated run is compared with the intact one and its map is drawn
    box = page.locator(".st-key-attention_ablate input")
    box.click()
    box.press_sequentially("Cross L1 H1")
    box.press("Enter")
    box.press("Escape")  # close the drop-down
    wait_charts(page, r"with the heads switched off ⟫", 1)
    page.get_by_text(re.compile(r"^(The outputs first differ at step \d+|Same output with these heads switched off)"))\
        .wait_for()
    _assert_no_errors(page)
    _shot(page, "attention_ablation")


def _choose_tiny_preset(page) -> None:
    """Pick the tiny preset and wait until the form shows it (its 600 steps; reverse's default is 1,400). Not "until
    the page is idle": the Train page's fragments rerun every few seconds, and with a run training on a loaded machine
    it is rarely idle."""
    choose(page, "train_preset", "tiny")
    page.wait_for_function("() => document.querySelector('.st-key-train_max_steps input')?.value === '600'",
                           timeout=120_000)


def _train_page(page) -> None:
    _go_to(page, "Train")
    _choose_tiny_preset(page)
    page.locator(".st-key-train_settings_open summary").click()  # every hyperparameter: one click away
    for key, value in TRAIN_FORM.items():
        field = page.locator(f".st-key-{key} input")
        field.fill(str(value))
        field.press("Tab")
    page.locator(".st-key-train_start button").click()
    page.get_by_text(re.compile(r"^Finished · reverse run #\d+ · done at step 40 in")).wait_for(timeout=120_000)
    wait_charts(page, r"\bStep 40 · layer \d+", 1)
    curves = page.locator(".st-key-train_curves .js-plotly-plot")
    curves.wait_for()
    assert "loss" in curves.inner_text()
    assert curves.locator(".scatterlayer .trace").count() >= 1
    _assert_no_errors(page)
    curves.scroll_into_view_if_needed()
    _shot(page, "train")


def test_a_person_decodes_step_by_step_explores_attention_and_trains(server, page, decoded):
    page.get_by_role("heading", name="Attention Studio").wait_for(timeout=60_000)
    wait_idle(page, 60_000)
    assert page.locator(".vega-embed svg, .vega-embed canvas").count() >= 1, "the home page draws no chart"
    _assert_no_errors(page)
    _shot(page, "home")
    _walk_decode(page, decoded)
    _attention_page(page, decoded)
    _train_page(page)
    assert "Traceback" not in server.log_text()


def _go_to(page, title: str) -> None:
    """Open a page from the sidebar and wait for its title. Not open_page's "until the page is idle": with a run
    training, the Train page's fragments and the Decode page's weights label rerun every few seconds."""
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title, exact=True).click()
    page.get_by_role("heading", name=title, exact=True).first.wait_for(timeout=120_000)


def _weights_step(page) -> int:
    """The training step the page's weights label names ("Weights of step 378 · 9 s ago · ...")."""
    label = page.get_by_text(re.compile(r"^Weights of step [\d,]+")).first
    label.wait_for(timeout=30_000)
    return int(re.match(r"Weights of step ([\d,]+)", label.inner_text()).group(1).replace(",", ""))


def test_a_reload_re_attaches_to_the_run_and_the_decode_view_follows_its_weights(server, page):
    page.get_by_role("heading", name="Attention Studio").wait_for(timeout=60_000)
    _go_to(page, "Train")
    _choose_tiny_preset(page)
    page.locator(".st-key-train_settings_open summary").click()  # every hyperparameter: one click away
    for key, value in {**TRAIN_FORM, "train_max_steps": 50_000, "train_max_seconds": 90}.items():
        field = page.locator(f".st-key-{key} input")
        field.fill(str(value))
        field.press("Tab")
    page.locator(".st-key-train_start button").click()
    page.get_by_text(re.compile(r"^Training · reverse run #\d+ · step [1-9]")).wait_for(timeout=60_000)

    page.reload()  # F5: a new session; the run trains on in the server
    page.get_by_role("heading", name="Train").wait_for(timeout=60_000)
    watch = page.locator("[class*='st-key-train_watch_'] button").first
    watch.wait_for(timeout=30_000)
    watch.click()
    progress = page.get_by_text(re.compile(r"^Training · reverse run #\d+ · step [\d,]+"))
    progress.wait_for(timeout=30_000)
    first = int(re.search(r"step ([\d,]+)", progress.inner_text()).group(1).replace(",", ""))
    page.wait_for_function(  # the re-attached page shows the run progressing, with no click
        """first => [...document.querySelectorAll('p, div')].some(e => {
             const m = /^Training · reverse run #\\d+ · step ([\\d,]+)/.exec(e.innerText || '');
             return m && Number(m[1].replace(/,/g, '')) > first; })""", arg=first, timeout=60_000)
    _assert_no_errors(page)
    _shot(page, "train_reattached")

    _go_to(page, "Decode")
    shown = _weights_step(page)
    page.wait_for_function(  # the view follows the newest weights on its own: no click, no typing
        """shown => [...document.querySelectorAll('p')].some(e => {
             const m = /^Weights of step ([\\d,]+)/.exec(e.innerText || '');
             return m && Number(m[1].replace(/,/g, '')) > shown; })""", arg=shown, timeout=60_000)
    assert "follows its newest weights" in page.get_by_text(re.compile(r"^Weights of step")).first.inner_text()
    _assert_no_errors(page)
    _shot(page, "decode_follows_live_run")
    _go_to(page, "Train")
    page.locator(".st-key-train_stop button").click()
    page.get_by_text(re.compile(r"^Stopped · reverse run #\d+")).wait_for(timeout=60_000)
    assert "Traceback" not in server.log_text()


def test_a_hugging_face_folder_decodes_step_by_step_in_the_browser(tiny_checkpoint_dir, tmp_path, browser):
    """Pick a tiny Marian folder of the models directory, walk two steps of its greedy decode. Every wait
    is for what the page shows (the card, the step heading, a chart with the typed text's pieces), never for idle."""
    from tests.helpers.hf_tiny_models import build
    from transformer.adapters import HFSeq2Seq
    from transformer.decode import greedy_decode

    folder = build("marian", tmp_path / "hf" / "tiny-marian")
    text = "the red bird eats the fish"
    expected = greedy_decode(HFSeq2Seq.load(str(folder)), text)
    n = len(expected.steps)
    env = {"ATTENTION_STUDIO_HF_MODELS": str(folder.parent)}
    with running_app(tiny_checkpoint_dir, tmp_path / "runs", extra_env=env) as app:
        page = new_page(browser)
        page.set_default_timeout(60_000)
        page.goto(app.url)
        page.locator(".st-key-sidebar_model [role='combobox']").wait_for()
        choose(page, "sidebar_model", "tiny-marian  ·  Hugging Face")
        page.get_by_text("(imported, not trained here)").wait_for()  # the sidebar card of the HF model
        page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Decode", exact=True).click()
        box = page.locator(".st-key-decode_text input")
        box.fill(text)
        box.press("Enter")
        # the step heading and a chart over the typed text's source pieces ("▁bird" is not in the example text)
        view = _wait_shown(page, f"Step 1 of {n}: ", "▁bird")
        assert f"output ‹{expected.steps[0].token}›" in view.heading
        page.locator(".st-key-decode_next button").click()
        view = _wait_shown(page, f"Step 2 of {n}: ", "▁bird")
        assert f"output ‹{expected.steps[1].token}›" in view.heading
        _assert_no_errors(page)
        _shot(page, "hf_decode_step")


def _wait_shown(page, heading: str, piece: str):
    """Wait until the run is over (no stale element left to click), the step heading starts with `heading` and a
    chart shows `piece`; what the page then shows."""
    return wait_for(page, (f"""([heading, piece]) => {{
        if (!({IDLE_JS})()) return false;
        const view = ({VIEW_JS})();
        return (view.heading || '').startsWith(heading) && view.charts.some((text) => text.includes(piece));
    }}""", [heading, piece]), 120_000)


def test_the_app_works_as_streamlit_ships_it_without_our_server_patches(tiny_checkpoint_dir, tmp_path, decoded,
                                                                       browser):
    """ATTENTION_STUDIO_SERVER_PATCHES=off: no TCP_NODELAY, static files, preloaded chunks or link read-ahead of
    ours; a shared Decode link still opens on its step with the decode drawn."""
    env = {"ATTENTION_STUDIO_SERVER_PATCHES": "off"}
    with running_app(tiny_checkpoint_dir, tmp_path / "runs", extra_env=env) as app:
        page = new_page(browser)
        page.goto(f"{app.url}/decode?model=shipped:reverse&text={decoded.source_text}&step=2")
        view = wait_decode_step(page, 2, timeout_ms=60_000)
        assert f"output ‹{decoded.steps[1].token}›" in view.heading
        # the first request of a fresh server was a page's own address: the frame's navigation is there, with
        # the registry's titles (not Streamlit's legacy pages/ folder navigation: ui/shell/frame.py)
        nav = page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()
        assert [t.strip().splitlines()[-1] for t in nav] == [p.title for p in PAGES]  # after the icon's name
        _assert_no_errors(page)
