"""AppTest: activation patching under Compare's edit mode. The job's maps hold the library's own figures for this
model and these inputs, an estimate reports its Spearman check and exact top ten, and an audience session is told
why it cannot start one."""
from __future__ import annotations

import pytest
from app_session import assert_no_exception, charts, only_frame, open_app, small_tables, texts

from transformer.analysis import patch_sites, prepare_patching
from transformer.decode import greedy_decode
from transformer.store import open_model

pytestmark = pytest.mark.slow  # drives AppTest page runs

TEXT, EDITED = "stressed", "strexsed"


def _edit_mode():
    at = open_app("compare")
    at.radio(key="compare_mode").set_value("edit").run()
    at.text_input(key="compare_text").input(TEXT).run()
    at.text_input(key="compare_edit").input(EDITED).run()
    assert_no_exception(at)
    return at


def test_exact_patching_maps_hold_the_models_recoveries(studio_env, tiny_checkpoint_dir):
    at = _edit_mode()
    at.text_input(key="compare_patch_contrast").input("").run()
    at.button(key="compare_patch_exact").click().run()
    assert_no_exception(at)
    assert any(t.startswith("Weights: ") for t in texts(at.caption))
    maps = [c for c in charts(at) if c["title"].startswith("the encoder output at each source position")]
    assert len(maps) == 1
    lm = open_model(str(tiny_checkpoint_dir / "reverse"))
    step = at.session_state["compare_patch_step"] - 1
    output = [s.token_id for s in greedy_decode(lm, TEXT).steps]
    setup = prepare_patching(lm, TEXT, EDITED, step=step, output=output)
    expected = patch_sites(lm, setup, ["encoder output"]).frame
    column = "difference" if setup.barely else "recovery"
    shown = only_frame(maps[0]).sort_values("position")[column].to_numpy()
    assert shown == pytest.approx(expected.sort_values("position")[column].to_numpy(), abs=1e-5)
    heads = [c for c in charts(at) if c["title"].startswith("each head's output")]
    assert len(heads) == 3  # encoder self, decoder self, cross


def test_the_estimate_reports_its_check_against_exact_figures(studio_env):
    at = _edit_mode()
    at.button(key="compare_patch_estimate").click().run()
    assert_no_exception(at)
    assert any(t.startswith("Spearman correlation of the estimate") for t in texts(at.caption))
    top = [t for t in small_tables(at) if t["columns"] in (["site", "estimated recovery", "exact recovery"],
                                                           ["site", "estimated difference", "exact difference"])]
    assert len(top) == 1 and 1 <= len(top[0]["rows"]) <= 10


def test_an_audience_session_cannot_start_patching(studio_env, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_AUDIENCE", "all")
    at = _edit_mode()
    assert not [b for b in at.button if b.key in ("compare_patch_exact", "compare_patch_estimate")]
    assert any("speaker's" in t for t in texts(at.info))
