"""AppTest: what a newcomer first sees on the shipped models. Home's example is one the default model translates as its
reference does; the model card shows the scores that mean something for the task (BLEU and chrF for translation,
exact match for a built-in task), the sacrebleu signature only behind the card's help; Compare opens on two different
models where there are two of one language pair."""
from __future__ import annotations

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_app, texts
from ui.models import model_options, shared_model
from ui.views.assembly.compare import default_model_b
from ui.views.kit import inference


@pytest.fixture
def shipped(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)


def test_home_example_is_translated_as_its_reference(shipped):
    active = shared_model(None)
    assert active.option.id == "shipped:multi30k-en-de"
    text = inference.default_text(active)
    reference = dict(active.examples)[text]
    assert inference.greedy(active, text).output_text.strip() == reference.strip()
    at = open_app()
    assert_no_exception(at)
    assert at.text_input(key="home_text").value == text


def _card(at) -> tuple[str, str]:
    card = next(m for m in at.sidebar.markdown if "**Task**" in m.value)
    return card.value, card.help or ""


def test_the_card_shows_bleu_and_chrf_for_translation_and_exact_match_for_a_built_in_task(shipped):
    at = open_app()
    value, help_text = _card(at)
    assert "BLEU" in value and "chrF" in value and "exact match" not in value, value
    assert "nrefs" not in value and "BLEU|nrefs" in help_text  # the signature: in the help only
    assert "translation" in value and "subword" in value and "bpe-level" not in value
    at.sidebar.selectbox(key="sidebar_model").set_value("shipped:reverse").run()
    value, help_text = _card(at)
    assert "exact match" in value and "BLEU" not in value, value
    assert "reverse a string of letters" in value and "Exact match" in help_text


def test_compare_opens_on_another_model_of_the_same_language_pair(shipped):
    options = {o.id: o for o in model_options()}
    assert default_model_b(options["shipped:multi30k-en-de"], list(options.values())) == "shipped:toy-en-de"
    assert default_model_b(options["shipped:sort"], list(options.values())) == "shipped:sort"  # the only one
    at = open_app("compare")
    assert_no_exception(at)
    assert at.selectbox(key="compare_model").value == "shipped:toy-en-de"
    assert not any("No divergence" in t for t in texts(at.markdown) + texts(at.caption) + texts(at.success))
