"""AppTest: the sidebar's card of the shipped recall model says how many of the tokens its streams determine it gets
right, not an exact match that the streams' random filler makes 0%, and its help says what those tokens are."""
from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_app

pytestmark = pytest.mark.skipif(not (ROOT / "checkpoints" / "recall" / "config.json").exists(),
                                reason="checkpoints/recall not shipped")


def test_the_recall_models_card_shows_determined_tokens_right_and_no_exact_match(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    at = open_app()
    at.sidebar.selectbox(key="sidebar_model").set_value("shipped:recall").run()
    assert_no_exception(at)
    card = next(m for m in at.sidebar.markdown if "**Task**" in m.value)
    right = re.search(r"\*\*Scores\*\* determined tokens right ([\d.]+)% · tokens right [\d.]+% · validation loss",
                      card.value)
    assert right and float(right.group(1)) >= 90, card.value
    assert "**Task** recall each key's value from earlier in a long stream" in card.value  # the task in words
    assert "exact match" not in card.value
    assert "recalled value" in (card.help or "") and "Exact match" not in (card.help or "")
