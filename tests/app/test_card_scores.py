"""The sidebar card's scores for the shipped models: a stream model (recall, induction) is scored on the tokens its
streams determine, in place of an exact match that random filler makes 0%; a built-in task keeps its exact match and
a translation its BLEU and chrF, as before."""
from __future__ import annotations

from functools import cache

import pytest

from tests.helpers import ROOT
from transformer.store import load_checkpoint
from ui.models.options import card_help, card_lines


@cache
def card(name: str) -> dict:
    folder = ROOT / "checkpoints" / name
    if not (folder / "config.json").exists():
        pytest.skip(f"checkpoints/{name} not shipped")
    return load_checkpoint(folder, load_optimizer=False, load_frames=False).card()


def scores(name: str) -> str:
    (line,) = [line for line in card_lines(card(name)) if line.startswith("**Scores**")]
    return line


@pytest.mark.parametrize("name", ["recall", "induction"])
def test_a_stream_models_card_shows_its_determined_tokens_right_and_no_exact_match(name):
    metrics = card(name)["metrics"]
    line = scores(name)
    assert line == (f"**Scores** determined tokens right {metrics['determined_accuracy']:.1%} · tokens right "
                    f"{metrics['token_accuracy']:.1%} · validation loss {metrics['loss']:.3f}")
    assert "exact match" not in line and metrics["determined_accuracy"] >= 0.99
    said = card_help(card(name))
    assert "Determined tokens right" in said and "recalled value" in said and "Exact match" not in said


def test_a_built_in_tasks_card_is_unchanged():
    metrics = card("reverse")["metrics"]
    assert "determined_accuracy" not in metrics
    assert scores("reverse") == (f"**Scores** exact match {metrics['exact_match']:.0%} · tokens right "
                                 f"{metrics['token_accuracy']:.1%} · validation loss {metrics['loss']:.3f}")
    assert card_help(card("reverse")).startswith("Exact match: the share of validation examples")


def test_a_translations_card_is_unchanged():
    metrics = card("toy-en-de")["metrics"]
    assert scores("toy-en-de") == (f"**Scores** BLEU {metrics['bleu']:.1f} · chrF {metrics['chrf']:.1f} · tokens "
                                   f"right {metrics['token_accuracy']:.1%} · validation loss {metrics['loss']:.3f}")
    assert card_help(card("toy-en-de")).startswith("BLEU and chrF compare")
