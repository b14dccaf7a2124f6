"""AppTest: the circuit under Compare's edit mode. The job draws the circuit and its faithfulness curve, the slider
starts at the smallest circuit reaching 0.8 (in the link), the share it keeps is the library's own figure for this
model and these inputs, and a post-norm or refused pair says why in one line; the Attention page links to it with its
input, and an encoder-only model's two inputs on Compare get it too."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import APP, assert_no_exception, charts, open_app
from transformer.analysis.circuits import find_circuit, pair_from_text
from transformer.decode import InputError
from transformer.store import open_model

TEXT, EDITED = "stressed", "strexsed"
CHECKPOINTS = Path(__file__).resolve().parents[3] / "checkpoints"
pytestmark = pytest.mark.slow


def _edit_mode(edited: str = EDITED):
    at = open_app("compare")
    at.radio(key="compare_mode").set_value("edit").run()
    at.text_input(key="compare_text").input(TEXT).run()
    at.text_input(key="compare_edit").input(edited).run()
    assert_no_exception(at)
    return at


def _accepted(adapter) -> tuple[str, object]:
    """An edit of TEXT whose answer the tiny model changes (the circuit needs two answers), and its result."""
    for edited in ("xtressed", "stresseq", "strexsed", "atressed", "stressex"):
        try:
            return edited, find_circuit([pair_from_text(adapter, TEXT, edited)], method="eap")
        except InputError:
            continue
    raise AssertionError("no edit changes the tiny model's answer")


def test_the_circuit_and_its_curve_hold_the_librarys_figures(studio_env, tiny_checkpoint_dir):
    adapter = open_model(str(tiny_checkpoint_dir / "reverse"))
    edited, result = _accepted(adapter)
    at = _edit_mode(edited)
    at.selectbox(key="compare_circuits_method").set_value("eap").run()
    at.button(key="compare_circuits_run").click().run()
    assert_no_exception(at)
    titles = [c["title"] for c in charts(at)]
    assert any(t.startswith("Circuit of the top") for t in titles)
    assert any(t.startswith("Faithfulness (area") for t in titles)
    n = result.faithfulness.n
    assert at.slider(key="compare_circuits_n").value == n
    kept = next(m for m in at.metric if m.label.startswith("Share of A − B"))
    assert float(kept.value) == pytest.approx(result.faithfulness.points[n], abs=2e-3)
    at.slider(key="compare_circuits_n").set_value(max(1, n - 1)).run()
    assert_no_exception(at)


def test_an_edit_the_library_refuses_is_said_in_one_line(studio_env, tiny_checkpoint_dir):
    adapter = open_model(str(tiny_checkpoint_dir / "reverse"))
    refused = None
    for edited in ("strexsed", "stressee", "ytressed"):
        try:
            pair_from_text(adapter, TEXT, edited)
        except InputError as exc:
            refused = edited, str(exc)
            break
    if refused is None:
        pytest.skip("the tiny model changes its answer for every edit tried")
    at = _edit_mode(refused[0])
    at.button(key="compare_circuits_run").click().run()
    assert_no_exception(at)
    assert [w.value for w in at.warning if w.value.startswith("No circuit:")] == [f"No circuit: {refused[1]}"]


def test_attention_links_to_the_circuit_on_compare_with_its_input(studio_env, tiny_checkpoint_dir):
    at = open_app("attention")
    at.text_input(key="attention_text").input(TEXT).run()
    assert_no_exception(at)
    links = [link for link in at.get("page_link") if link.proto.label == "Find the circuit on Compare"]
    assert len(links) == 1 and links[0].proto.page == "compare"
    params = {k: v[0] for k, v in parse_qs(links[0].proto.query_string).items()}
    assert (params["cmode"], params["text"]) == ("edit", TEXT)
    edited, _ = _accepted(open_model(str(tiny_checkpoint_dir / "reverse")))
    fresh = AppTest.from_file(str(APP), default_timeout=90)
    fresh.switch_page("pages/compare.py")
    fresh.query_params = {**params, "edit": edited}
    fresh.run()
    assert_no_exception(fresh)
    assert fresh.session_state["compare_mode"] == "edit" and fresh.session_state["compare_text"] == TEXT
    assert fresh.button(key="compare_circuits_run")  # the circuit, one click away


def test_an_encoder_only_models_two_inputs_get_their_circuit(studio_env, monkeypatch):
    """Compare's two inputs through an encoder-only model (of two lengths here): the circuit at the mask."""
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(CHECKPOINTS))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.switch_page("pages/compare.py")
    at.query_params = {"model": "shipped:toy-en-de-encoder-only", "way": "inputs", "text": "a man drinks a <mask>",
                       "text_b": "a man drinks <mask>"}
    at.run()
    assert_no_exception(at)
    at.selectbox(key="compare_circuits_method").set_value("eap").run()
    at.button(key="compare_circuits_run").click().run()
    assert_no_exception(at)
    titles = [c["title"] for c in charts(at)]
    assert any(t.startswith("Circuit of the top") for t in titles), titles
    assert any("at the mask" in c.value for c in at.caption)
