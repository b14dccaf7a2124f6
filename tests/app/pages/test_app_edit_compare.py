"""AppTest: Compare's edit mode. One model on an input and its edit: both outputs with the first divergence, the
aligned steps with the decodes' own probabilities, B − A on aligned axes, the heads ranked; both inputs in the link."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import APP, assert_no_exception, chart_titled, open_app, small_tables, texts
from transformer.analysis import compare_edit
from transformer.store import open_model

TEXT, EDITED = "stressed", "strexsed"


def _edit_mode(text: str = TEXT, edited: str = EDITED) -> AppTest:
    at = open_app("compare")
    at.radio(key="compare_mode").set_value("edit").run()
    at.text_input(key="compare_text").input(text).run()
    at.text_input(key="compare_edit").input(edited).run()
    assert_no_exception(at)
    return at


def test_the_edit_is_decoded_and_every_number_is_the_models(studio_env):
    at = _edit_mode()
    assert [t.value for t in at.title] == ["Compare"]
    said = [t for t in texts(at.warning) + texts(at.success) if t.startswith(("First divergence", "No divergence"))]
    assert len(said) == 1  # the tiny model may or may not change its output: either way the page says which
    steps, ranking = small_tables(at)
    assert steps["columns"][:3] == ["A step", "A token", "A prob"] and "KL(A‖B)" in steps["columns"]
    diff = chart_titled(at, "B − A · ")
    frame = max(diff["frames"].values(), key=len)
    assert set(frame["row"]) <= {"same", "changed", "inserted", "deleted"} and (frame["difference"].abs() <= 1).all()
    assert ranking["columns"] == ["head", "mean |B − A|", "largest |B − A|"] and len(ranking["rows"]) >= 1


def test_the_step_table_shows_the_decodes_probabilities(studio_env, tiny_checkpoint_dir):
    at = _edit_mode()
    steps = small_tables(at)[0]
    expected = compare_edit(open_model(str(tiny_checkpoint_dir / "reverse")), TEXT, EDITED).steps
    shown = [float(r[2]) for r in steps["rows"] if r[2]]
    assert shown == pytest.approx([round(p, 3) for p in expected["prob_a"].dropna()], abs=1e-3)


def test_both_inputs_travel_in_the_link(studio_env):
    at = _edit_mode()
    params = dict(at.query_params)
    assert (params["cmode"], params["text"], params["edit"]) == ("edit", TEXT, EDITED)
    fresh = AppTest.from_file(str(APP), default_timeout=90)
    fresh.switch_page("pages/compare.py")
    fresh.query_params = params
    fresh.run()
    assert_no_exception(fresh)
    assert fresh.session_state["compare_edit"] == EDITED and fresh.session_state["compare_mode"] == "edit"
    assert dict(fresh.query_params) == params


def test_an_identical_edit_gets_one_message(studio_env):
    at = _edit_mode(TEXT, TEXT)
    assert any("same as the input" in t for t in texts(at.warning))


def test_two_models_mode_keeps_its_links_without_an_edit(studio_env):
    at = open_app("compare")
    at.text_input(key="compare_text").input(TEXT).run()
    assert "cmode" not in at.query_params and "edit" not in at.query_params
