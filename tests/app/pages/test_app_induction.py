"""AppTest: the shipped induction model opens from the catalog, its card names its known heads, the Learn tour walks
every stage on it with a repeated sequence as the prompt, and the tour's several-heads stage opens it as the example of
heads that build on heads."""
from __future__ import annotations

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_app
from transformer.store import load_checkpoint
from ui.models import MODEL_KEY
from ui.views import TOUR
from ui.views.assembly.learn import COMPOSITION_PROMPT as REPEATED


def test_the_induction_model_opens_names_its_heads_in_the_card_and_walks_the_learn_tour(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("shipped:induction").run()
    assert_no_exception(at)
    card = "\n".join(m.value for m in at.sidebar.markdown)
    known = load_checkpoint(ROOT / "checkpoints" / "induction", load_optimizer=False).known_heads
    assert "**Known heads**" in card and all(f"`{label}` {role}" in card for label, role in known.items())
    at.switch_page("pages/learn.py").run()
    at.text_input(key="learn_text").input(REPEATED).run()
    assert_no_exception(at)
    for stage in range(len(TOUR)):
        at.selectbox(key="learn_stage").set_value(stage).run()
        assert_no_exception(at)


def test_the_learn_tours_several_heads_stage_opens_the_induction_model_as_the_example_of_composition(monkeypatch,
                                                                                                       tmp_path):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("shipped:reverse-decoder-only").run()
    at.switch_page("pages/learn.py").run()
    heads = next(i for i, stage in enumerate(TOUR) if stage.name == "heads")
    at.selectbox(key="learn_stage").set_value(heads).run()
    at.button(key="learn_composition").click().run()
    assert_no_exception(at)
    assert at.session_state[MODEL_KEY] == "shipped:induction"
    assert at.text_input(key="learn_text").value == REPEATED
    page = "\n".join(m.value for m in at.main.markdown)
    known = load_checkpoint(ROOT / "checkpoints" / "induction", load_optimizer=False).known_heads
    (induction,) = [label for label, role in known.items() if role == "induction"]
    assert "Heads that build on heads" in page and f"`{induction}` (induction)" in page
