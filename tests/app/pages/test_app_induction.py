"""AppTest: the shipped induction model opens from the catalog, its card names its known heads, and the Learn tour
walks every stage on it with a repeated sequence as the prompt."""
from __future__ import annotations

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_app
from transformer.store import load_checkpoint
from ui.models import MODEL_KEY
from ui.views import TOUR

REPEATED = "qXk3Bw7pLmZ2aRt9qXk3Bw7pLm"


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
