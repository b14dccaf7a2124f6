"""AppTest: what a newcomer first sees on the shipped models. Home's example is one the default model translates as its
reference does; the model card shows the scores that mean something for the task (BLEU and chrF for translation,
exact match for a built-in task), the sacrebleu signature only behind the card's help; Compare opens on another model
that reads A's input, else on A itself; stream models open on a validation stream, whose determined tokens
they predict."""
from __future__ import annotations

import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_app, texts
from transformer.data import task_from_spec
from ui.models import model_options, shared_model
from ui.views.assembly.compare import default_model_b, reads_input
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


def test_compare_opens_on_another_model_that_reads_the_input(shipped):
    options = {o.id: o for o in model_options()}
    every = list(options.values())
    multi30k = shared_model("shipped:multi30k-en-de")
    sentence = inference.default_text(multi30k)
    toy = shared_model("shipped:toy-en-de")
    assert toy.adapter.tokenize_source(sentence).unknown  # the toy grammar's words do not cover Multi30k's sentence
    reads = reads_input(sentence)
    assert default_model_b(options["shipped:multi30k-en-de"], every, reads) == "shipped:multi30k-en-de"
    letters = reads_input(inference.default_text(shared_model("shipped:reverse")))
    assert default_model_b(options["shipped:reverse"], every, letters) == "shipped:reverse-decoder-only"
    assert default_model_b(options["shipped:sort"], every, letters) == "shipped:sort"  # the only one
    toy_reads = reads_input(inference.default_text(toy))  # toy-en-de's other model is encoder-only: it does not decode
    assert default_model_b(options["shipped:toy-en-de"], every, toy_reads) == "shipped:multi30k-en-de"
    at = open_app("compare")
    assert_no_exception(at)
    assert at.selectbox(key="compare_model").value == "shipped:multi30k-en-de"
    assert any("B is A itself" in t for t in texts(at.caption))
    assert not any("einkleiner" in t for t in texts(at.markdown) + texts(at.caption))


def test_stream_models_open_on_a_stream_they_were_trained_to_read(shipped):
    for name in ("induction", "recall"):
        active = shared_model(f"shipped:{name}")
        text = inference.default_text(active)
        assert text != inference.FALLBACK_TEXT["char"]
        determined = task_from_spec({**active.task_spec, "n_train": 1}).determined[text]  # a validation stream
        adapter = active.adapter
        src = adapter.tokenize_source(text)
        with torch.no_grad():
            logits = adapter.teacher_logits(active.model, torch.tensor([list(src.ids)]),
                                            torch.tensor([adapter.decoder_prefix(src)]))[0]
        predicted = logits.argmax(-1).tolist()  # a prompt row predicts the prompt's next token
        right = sum(predicted[p - 1] == src.ids[p] for p in determined)
        assert right >= 0.9 * len(determined), (name, right, len(determined))
