"""The ablation estimate over a stated sample of a corpus: per head the mean of the one-input estimates
(`estimate_head_effects` on the output the Attention page scores) over the corpus's first N sentences, for an
encoder-decoder, our decoder-only model and a Hugging Face causal one; a sentence that cannot be read is skipped and
said; an encoder-only model is refused."""
from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import ROOT
from tests.helpers.hf_causal_models import build
from transformer.analysis import (
    corpus_estimate,
    estimate_head_effects,
    head_finder_frame,
    output_ids,
)
from transformer.decode import InputError, greedy_decode
from transformer.store import load_checkpoint, open_model, task_for_checkpoint

SENTENCES = ["tkgnkuhmpxnhtqgx", "pvissbxfud", "xisxrmclpxzmwguoask", "abcdefg", "qqqzz"]


def _mean_of_one_input_estimates(adapter, sources, outputs) -> pd.Series:
    frames = [estimate_head_effects(adapter, s, o) for s, o in zip(sources, outputs, strict=True)]
    return pd.concat(frames).groupby("label")["estimate"].mean()


def _check(adapter, sources, references=None, n=3):
    found = corpus_estimate(adapter, sources, references, n=n)
    first = sources[:n]
    if references is None:
        outputs = [output_ids(greedy_decode(adapter, s)) for s in first]
    else:
        outputs = [[*adapter.target_ids(r), min(adapter.end_ids)] for r in references[:n]]
    want = _mean_of_one_input_estimates(adapter, first, outputs)
    got = found.frame.set_index("label")["estimate"]
    assert set(got.index) == set(want.index)
    pd.testing.assert_series_equal(got.sort_index(), want.sort_index(), check_names=False, atol=1e-9, rtol=1e-7)
    assert (found.sentences, found.asked, found.skipped) == (n, n, ())
    block = found.to_dict()
    assert (block["sentences"], block["first"]) == (n, n) and len(block["heads"]) == len(want)
    return found


@pytest.mark.parametrize("name", ["reverse", "reverse-decoder-only"])
def test_the_estimate_is_the_mean_of_the_one_input_estimates_over_the_first_sentences(name):
    adapter = open_model(str(ROOT / "checkpoints" / name))
    found = _check(adapter, SENTENCES)
    assert found.mode == "greedy" and "first 3 sentences" in found.caption()
    assert not found.frame.equals(corpus_estimate(adapter, SENTENCES, n=4).frame)  # the 4th sentence counts at n=4


def test_teacher_forced_on_the_references():
    ckpt = load_checkpoint(ROOT / "checkpoints" / "reverse", load_optimizer=False)
    examples = task_for_checkpoint(ckpt).valid[:4]
    found = _check(open_model(str(ROOT / "checkpoints" / "reverse")), [e.source for e in examples],
                   [e.target for e in examples])
    assert found.mode == "reference" and "references" in found.caption()


def test_a_hugging_face_causal_model(tmp_path):
    _check(open_model(str(build("gpt2", tmp_path / "gpt2"))), ["A man in a blue shirt", "Two dogs play", "A girl"],
           n=2)


def test_a_sentence_that_cannot_be_read_is_skipped_and_said():
    adapter = open_model(str(ROOT / "checkpoints" / "reverse"))
    found = corpus_estimate(adapter, [SENTENCES[0], "", SENTENCES[1]], n=3)
    assert (found.sentences, found.asked) == (2, 3) and found.skipped[0].startswith("sentence 2:")
    want = _mean_of_one_input_estimates(adapter, [SENTENCES[0], SENTENCES[1]],
                                        [output_ids(greedy_decode(adapter, s)) for s in SENTENCES[:2]])
    pd.testing.assert_series_equal(found.frame.set_index("label")["estimate"].sort_index(), want.sort_index(),
                                   check_names=False)
    assert "1 of the first 3 skipped" in found.caption()


def test_the_finder_takes_it_as_its_estimate_column():
    from transformer.analysis import corpus_statistics
    adapter = open_model(str(ROOT / "checkpoints" / "reverse"))
    found = corpus_estimate(adapter, SENTENCES, n=2)
    frame = head_finder_frame(corpus_statistics(adapter, SENTENCES), estimate=found.frame)
    by_label = found.frame.set_index("label")["estimate"]
    assert frame.set_index("label")["estimate"].to_dict() == pytest.approx(by_label.to_dict())


def test_an_encoder_only_model_is_refused():
    with pytest.raises(InputError, match="writes no output"):
        corpus_estimate(open_model(str(ROOT / "checkpoints" / "toy-en-de-encoder-only")), ["a cat"], n=1)
