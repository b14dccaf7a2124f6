"""Beam search: width 1 is greedy decoding; wider beams rank hypotheses by length-penalised log-probability."""

import importlib
import pkgutil

import pytest

from tests.helpers import ROOT
from transformer.adapters import adapter_for
from transformer.cli import main
from transformer.data import START_ID
from transformer.decode import InputError, beam_search, greedy_decode
from transformer.store import load_checkpoint

ROOT = ROOT / "checkpoints"


@pytest.fixture(scope="module")
def toy():
    return load_checkpoint(ROOT / "toy-en-de", load_optimizer=False)


@pytest.mark.parametrize("text", ["the man sees the dog", "a small cat sleeps", "the children read a book"])
def test_width_one_gives_the_greedy_output(toy, text):
    greedy = greedy_decode(adapter_for(toy.model, toy.src_tokenizer, toy.tgt_tokenizer), text)
    best = beam_search(toy.model, toy.src_tokenizer, toy.tgt_tokenizer, text, width=1)
    assert len(best) == 1 and best[0].text == greedy.output_text and best[0].finished


def test_a_tiny_untrained_model_beam_stays_consistent_with_greedy(tiny_checkpoint_dir):
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse")
    for text in ("abcd", "hello", "zzyx"):
        greedy = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text, max_steps=12)
        best = beam_search(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, text, width=1, max_steps=12)[0]
        ids = [s.token_id for s in greedy.steps if s.token_id != 2]
        if not any(i in (0, START_ID) for i in ids):  # beam never emits pad/start; greedy may on a weak model
            assert list(best.token_ids) == ids


def test_wider_beams_are_sorted_by_score_and_never_worse_than_greedy(toy):
    text = "a small cat sleeps"
    hyps = beam_search(toy.model, toy.src_tokenizer, toy.tgt_tokenizer, text, width=4)
    assert len(hyps) == 4 and len({h.text for h in hyps}) == 4
    scores = [h.score for h in hyps]
    assert scores == sorted(scores, reverse=True)
    greedy = beam_search(toy.model, toy.src_tokenizer, toy.tgt_tokenizer, text, width=1)[0]
    assert hyps[0].score >= greedy.score - 1e-6


def test_no_hypothesis_contains_pad_or_start(toy):
    hyps = beam_search(toy.model, toy.src_tokenizer, toy.tgt_tokenizer, "the dog runs", width=8)
    assert len(hyps) == 8
    for h in hyps:
        assert 0 not in h.token_ids and START_ID not in h.token_ids


@pytest.mark.parametrize("width, alpha", [(0, 0.6), (65, 0.6), (2, -1.0), (2, float("nan"))])
def test_bad_beam_settings_get_a_clear_message(toy, width, alpha):
    with pytest.raises(InputError, match="beam width|length penalty"):
        beam_search(toy.model, toy.src_tokenizer, toy.tgt_tokenizer, "the dog", width=width, alpha=alpha)


@pytest.mark.slow  # a real process or a full evaluation
def test_cli_decode_and_eval_take_a_beam(capsys):
    assert main(["decode", str(ROOT / "toy-en-de"), "the man sees the dog", "--beam", "3"]) == 0
    assert capsys.readouterr().out.strip() == "der mann sieht den hund"
    assert main(["eval", str(ROOT / "toy-en-de"), "--n", "20", "--beam", "2"]) == 0
    out = capsys.readouterr().out
    assert '"decoding": "beam 2, length penalty 0.6"' in out and "tok:13a" in out
    assert main(["decode", str(ROOT / "toy-en-de"), "the dog", "--beam", "99"]) == 2
    assert capsys.readouterr().err.startswith("error: The beam width")


def test_decode_with_a_beam_reads_the_checkpoint_once(tiny_checkpoint_dir, monkeypatch, capsys):
    from transformer import cli
    from transformer.store import checkpoint, models

    loads = []
    real = checkpoint.load_checkpoint

    def counted(*args, **kwargs):
        loads.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(models, "load_checkpoint", counted)
    for info in pkgutil.iter_modules(cli.__path__):  # every command module that reads a checkpoint itself
        module = importlib.import_module(f"transformer.cli.{info.name}")
        if hasattr(module, "load_checkpoint"):
            monkeypatch.setattr(module, "load_checkpoint", counted)
    assert cli.main(["decode", str(tiny_checkpoint_dir / "reverse"), "abc", "--beam", "3", "--max-steps", "6"]) == 0
    assert len(loads) == 1 and capsys.readouterr().out.endswith("\n")
