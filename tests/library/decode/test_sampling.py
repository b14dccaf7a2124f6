"""Sampling inside step-through (`greedy_decode(..., sampling=Sampling(...))`): one seed gives the same tokens in the
library, the command line and the notebook; for Hugging Face models the draws equal `generate(do_sample=True)`'s
under the same seed; temperature 0 is greedy; each bad value gets its message."""
from __future__ import annotations

import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.hf_causal_models import CAUSAL
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import FAMILIES, MORE_FAMILIES
from tests.helpers.hf_tiny_models import build as build_seq2seq
from transformer import notebook
from transformer.cli import main
from transformer.decode import InputError, Sampling, greedy_decode, read_source, warp
from transformer.store import open_model

pytestmark = pytest.mark.slow

SHIPPED = str(ROOT / "checkpoints" / "multi30k-en-de")
TEXT = "A man in a blue shirt rides a bike."
HOT = Sampling(temperature=2.0, top_k=0, top_p=1.0, seed=7)


def test_one_seed_gives_the_same_tokens_in_the_library_the_cli_and_the_notebook(capsys):
    adapter = open_model(SHIPPED)
    first = greedy_decode(adapter, TEXT, sampling=HOT)
    assert first.mode == "sampled" and len(first.samples) == len(first.steps)
    assert greedy_decode(adapter, TEXT, sampling=HOT).output_tokens == first.output_tokens
    other = greedy_decode(adapter, TEXT, sampling=Sampling(temperature=2.0, seed=8))
    assert other.output_tokens != first.output_tokens  # at temperature 2 two seeds part at once
    assert main(["decode", SHIPPED, TEXT, "--temperature", "2", "--seed", "7"]) == 0
    assert capsys.readouterr().out == first.output_text + "\n"
    assert notebook.decode(adapter, TEXT, sampling=HOT).output_tokens == first.output_tokens


def test_temperature_zero_is_greedy():
    adapter = open_model(SHIPPED)
    greedy = greedy_decode(adapter, TEXT)
    cold = greedy_decode(adapter, TEXT, sampling=Sampling(temperature=0, top_k=3, seed=5))
    assert cold.output_tokens == greedy.output_tokens and cold.mode == "greedy"


def test_each_step_says_what_it_was_drawn_from():
    adapter = open_model(SHIPPED)
    result = greedy_decode(adapter, TEXT, sampling=Sampling(temperature=1.5, top_k=5, top_p=0.8, seed=3))
    for step, sample in zip(result.steps, result.samples, strict=True):
        assert 1 <= sample.kept <= 5  # top-k 5, then top-p
        assert len(sample.top_after) == sample.kept
        assert sum(p for _, p in sample.top_after) == pytest.approx(1.0, abs=1e-5)
        assert step.token in [t for t, _ in sample.top_after]  # never drawn beyond the cut
        assert sample.rank <= 5
    data = result.to_dict()["sampling"]
    assert (data["temperature"], data["top_k"], data["top_p"], data["seed"]) == (1.5, 5, 0.8, 3)
    assert len(data["steps"]) == len(result.steps) and "kept" in data["steps"][0]


def test_the_warpers_are_generates():
    from transformers.generation import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
    torch.manual_seed(0)
    scores = torch.randn(1, 500) * 3
    ids = torch.zeros(1, 1, dtype=torch.long)
    for settings in (Sampling(0.7, 0, 1.0), Sampling(1.0, 20, 1.0), Sampling(1.3, 40, 0.6), Sampling(1.0, 0, 0.3)):
        expected = scores
        if settings.temperature != 1.0:
            expected = TemperatureLogitsWarper(settings.temperature)(ids, expected)
        if settings.top_k:
            expected = TopKLogitsWarper(settings.top_k)(ids, expected)
        if settings.top_p < 1:
            expected = TopPLogitsWarper(settings.top_p)(ids, expected)
        assert torch.equal(warp(scores, settings), expected)


@pytest.mark.parametrize("sampling, message", [
    (Sampling(temperature=-0.5), "temperature must be a number from 0"),
    (Sampling(temperature=1e9), "temperature must be a number from 0"),
    (Sampling(top_p=0.0), "Top-p must be a number above 0"),
    (Sampling(top_p=1.2), "Top-p must be a number above 0"),
    (Sampling(top_k=-1), "Top-k must be a whole number"),
    (Sampling(top_k=10**9), "Top-k must be a whole number"),
    (Sampling(seed=-3), "seed must be a whole number"),
])
def test_bad_settings_get_their_message(sampling, message):
    with pytest.raises(InputError, match=message):
        greedy_decode(open_model(SHIPPED), TEXT, sampling=sampling)


@pytest.mark.parametrize("flags, message", [
    (["--temperature", "-1"], "The temperature must be a number from 0 (greedy) to 100, got -1.0."),
    (["--temperature", "1e9"], "The temperature must be a number from 0 (greedy) to 100, got 1000000000.0."),
    (["--temperature", "1", "--top-p", "0"], "Top-p must be a number above 0 and at most 1 (1: off), got 0.0."),
    (["--temperature", "1", "--top-p", "1.5"], "Top-p must be a number above 0 and at most 1 (1: off), got 1.5."),
    (["--temperature", "1", "--sample-top-k", "31"], "Top-k must be a whole number from 0 (off) to the "
                                                     "vocabulary's 30 tokens, got 31."),
    (["--beam", "31"], "The beam width must be a whole number from 1 to 30 (this model's vocabulary has 30 tokens), "
                       "got 31."),
])
def test_each_bad_value_gets_one_line_in_the_cli(flags, message, capsys):
    assert main(["decode", str(ROOT / "checkpoints" / "reverse"), "abcdef", *flags]) == 2
    assert capsys.readouterr().err == f"error: {message}\n"


@pytest.fixture(scope="module", params=[*FAMILIES, *MORE_FAMILIES, *CAUSAL])
def hf(request, tmp_path_factory):
    family = request.param
    build = build_causal if family in CAUSAL else build_seq2seq
    return open_model(str(build(family, tmp_path_factory.mktemp(family) / family)))


@pytest.mark.parametrize("sampling", [Sampling(1.0, 0, 1.0, 11), Sampling(0.8, 30, 0.9, 5)])
def test_hugging_face_draws_equal_generates(hf, sampling):
    text = "a man sees the dog"
    ours = greedy_decode(hf, text, max_steps=8, sampling=sampling)
    source = read_source(hf, text)
    ids = torch.tensor([source.ids])
    torch.manual_seed(sampling.seed)
    with hf.running():
        out = hf.network.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, num_beams=1,
                                  temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p,
                                  max_new_tokens=8)
    first = ids.shape[1] if hf.family.prompt_in_decoder else len(hf.start_ids)
    assert [s.token_id for s in ours.steps] == out[0, first:].tolist()
