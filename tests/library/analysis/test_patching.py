"""Activation patching against known answers: per family, copying a whole layer's residual stream (or an
encoder-decoder's whole encoder output) from the clean run recovers the clean metric exactly and patching nothing
recovers nothing; on the shipped reversal and toy English->German models, the edited token's encoder output carries
the answer. Nothing of a patch stays on the shared model."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import CAUSAL
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import FAMILIES, MORE_FAMILIES
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.our_models import OURS, _ours
from transformer.adapters import InspectableModel
from transformer.analysis import (
    ENCODER_OUTPUT,
    HEAD_POSITIONS,
    align_tokens,
    estimate_patching,
    find_site,
    patch_sites,
    patched_decode,
    patched_metrics,
    patching_agreement,
    prepare_patching,
    residual_site,
    sites_of,
)
from transformer.decode import InputError, greedy_decode
from transformer.store import open_model

pytestmark = pytest.mark.slow

SWAPS = [(f"the {a} sees a red house", b) for a in ("dog", "cat", "man", "tree")
         for b in ("cat", "man", "bird", "fish", "tree", "dog", "woman", "house")]


DECODING_OURS = tuple(o for o in OURS if "encoder-only" not in o)  # an encoder-only model writes no answer to patch


@pytest.fixture(scope="module", params=[*DECODING_OURS, *FAMILIES, *MORE_FAMILIES, *CAUSAL])
def adapter(request, tmp_path_factory) -> InspectableModel:
    family = request.param
    if family in OURS:
        return _ours(family)
    build = build_causal if family in CAUSAL else build_seq2seq
    return open_model(str(build(family, tmp_path_factory.mktemp(family) / family)))


def _equal_length_edit(adapter: InspectableModel) -> tuple[str, str]:
    """A clean input and a one-token swap of the same length in this model's tokens."""
    if adapter.source == "checkpoint":
        return "abcdefg", "abcxefg"
    for clean, word in SWAPS:
        corrupted = clean.replace(clean.split()[1], word)
        a, b = adapter.tokenize_source(clean).ids, adapter.tokenize_source(corrupted).ids
        if len(a) == len(b) and a != b:
            return clean, corrupted
    pytest.skip("no one-token swap of equal length in this tokenizer")


@pytest.fixture(scope="module")
def setup(adapter):
    clean, corrupted = _equal_length_edit(adapter)
    return prepare_patching(adapter, clean, corrupted)


def _recovered(setup, metric: float) -> float:
    """The recovery where the edit moves the metric, else how far the metric is from the clean one's."""
    return setup.recovery(metric) if not setup.barely else 1.0 + (metric - setup.clean_metric)


def test_patching_a_whole_layer_of_the_residual_recovers_everything(adapter, setup):
    stack = "encoder" if adapter.family.has_cross else "decoder"
    metrics = patched_metrics(adapter, setup, [residual_site(setup, stack, 1).patches, []])
    assert _recovered(setup, metrics[0]) == pytest.approx(1.0, abs=1e-4)
    assert metrics[1] == pytest.approx(setup.corrupted_metric, abs=1e-5)  # patching nothing: still corrupted
    assert (setup.recovery(metrics[1]) == pytest.approx(0.0, abs=1e-4)) or setup.barely


def test_patching_the_whole_encoder_output_recovers_everything(adapter, setup):
    if not adapter.family.has_cross:
        pytest.skip("no encoder output to patch")
    last = len(setup.clean.residual["encoder"]) - 1
    metric, = patched_metrics(adapter, setup, [residual_site(setup, "encoder", last).patches])
    assert _recovered(setup, metric) == pytest.approx(1.0, abs=1e-4)


def test_every_site_is_measured_once_and_batches_agree(adapter, setup):
    result = patch_sites(adapter, setup, batch=7)
    frame = result.frame
    counts = adapter.head_counts()
    assert (frame["site"] == "head").sum() == sum(n * h for n, h in counts.values())
    one_by_one = patch_sites(adapter, setup, batch=1).frame
    torch.testing.assert_close(torch.tensor(frame["metric"].to_numpy()),
                               torch.tensor(one_by_one["metric"].to_numpy()), atol=1e-4, rtol=0)
    estimate = estimate_patching(adapter, setup).frame
    assert len(estimate) == len(frame)


def test_nothing_of_a_patch_stays_on_the_model(adapter, setup):
    before = {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks)) for name, m in adapter.network.named_modules()}
    patch_sites(adapter, setup, ["head"])
    estimate_patching(adapter, setup, ["head"])
    after = {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks)) for name, m in adapter.network.named_modules()}
    assert after == before
    assert not adapter.network.training


def _patched_noun(adapter: InspectableModel, clean: str, corrupted: str, clean_word: str, contrast: str):
    output = [s for s in prepare_patching(adapter, clean, corrupted).output]
    step = [adapter.id_to_token(i) for i in output].index(clean_word)
    setup = prepare_patching(adapter, clean, corrupted, step=step, contrast=contrast)
    frame = patch_sites(adapter, setup, [ENCODER_OUTPUT]).frame
    return setup, frame.sort_values("recovery", ascending=False).reset_index(drop=True)


def test_the_reversal_model_reads_the_replaced_character_from_its_position():
    adapter = open_model("checkpoints/reverse")
    clean, corrupted = "abcdefghijkl", "abcdefxhijkl"
    setup, frame = _patched_noun(adapter, clean, corrupted, "g", "x")
    assert setup.gap > 1.0
    assert frame.loc[0, "token"] == "g" and frame.loc[0, "position"] == 6
    assert frame.loc[0, "recovery"] >= 0.8
    assert frame.loc[1, "recovery"] < frame.loc[0, "recovery"]


def test_the_toy_translator_reads_the_swapped_noun_from_its_position():
    adapter = open_model("checkpoints/toy-en-de")
    _, frame = _patched_noun(adapter, "the dog sees the cat", "the man sees the cat", "hund", "mann")
    assert frame.loc[0, "token"] == "dog" and frame.loc[0, "position"] == 1
    assert frame.loc[0, "recovery"] >= 0.8


def test_inputs_of_different_lengths_patch_the_aligned_positions_and_say_which_are_not():
    adapter = open_model("checkpoints/toy-en-de")
    setup = prepare_patching(adapter, "the dog sees the cat", "the big dog sees the cat")
    assert setup.unaligned() == {"encoder": ((), (1,))}
    frame = patch_sites(adapter, setup, [ENCODER_OUTPUT]).frame
    assert list(frame["token"]) == ["the", "dog", "sees", "the", "cat", "</s>"]
    assert not frame["metric"].isna().any()


@pytest.mark.parametrize("clean, corrupted, kwargs, message", [
    ("abcdef", "abcdef", {}, "reads the same"),
    ("abcdef", "", {}, "empty"),
    ("abcdef", "abcxef", {"step": 40}, "past the end"),
    ("abcdef", "abcxef", {"contrast": "xyz"}, "not one output token"),
    ("abcdef", "abcxef", {"step": 0, "contrast": "f"}, "own token"),
    ("abcdef", "abc" * 200, {}, "reads at most"),
])
def test_bad_input_gets_one_clear_message(clean, corrupted, kwargs, message):
    adapter = open_model("checkpoints/reverse")
    with pytest.raises(InputError, match=message):
        prepare_patching(adapter, clean, corrupted, **kwargs)


def test_the_alignment_pairs_swaps_and_leaves_insertions_alone():
    alignment = align_tokens(["the", "dog", "sees"], ["the", "big", "cat", "sees"])
    assert alignment.pairs == ((0, 0), (None, 1), (1, 2), (2, 3))
    assert alignment.only_b == (1,) and alignment.only_a == ()


@pytest.mark.parametrize("model", ["checkpoints/reverse", "checkpoints/reverse-decoder-only"])
def test_a_patched_decode_replays_the_clean_character(model):
    adapter = open_model(model)
    setup = prepare_patching(adapter, "abcdefghijkl", "abcdefxhijkl")
    stack = "encoder" if adapter.family.has_cross else "decoder"
    site = find_site(adapter, setup, {"site": "residual", "where": stack, "layer": 1, "head": -1, "position": 6})
    before = {name: dict(m._forward_hooks) for name, m in adapter.network.named_modules()}
    assert patched_decode(adapter, setup, site).output_text == "lkjihgfedcba"  # the corrupted input decodes "...x..."
    assert {name: dict(m._forward_hooks) for name, m in adapter.network.named_modules()} == before


@pytest.mark.parametrize("model", ["checkpoints/reverse", "checkpoints/reverse-decoder-only"])
def test_a_decoder_side_site_is_replayed_at_its_step(model):
    adapter = open_model(model)
    clean, corrupted = "abcdefghijkl", "abcdefxhijkl"
    setup = prepare_patching(adapter, clean, corrupted, step=5)  # the step that emits the replaced character
    last, layers = setup.tgt[0].shape[1] - 1, len(setup.clean.residual["decoder"]) - 1
    site = find_site(adapter, setup, {"site": "residual", "where": "decoder", "layer": layers, "head": -1,
                                 "position": last})  # the decoder's last residual at the target position
    before = {name: dict(m._forward_hooks) for name, m in adapter.network.named_modules()}
    patched, a, b = patched_decode(adapter, setup, site), greedy_decode(adapter, clean), greedy_decode(adapter,
                                                                                                       corrupted)
    assert {name: dict(m._forward_hooks) for name, m in adapter.network.named_modules()} == before
    assert [s.token for s in patched.steps[:5]] == [s.token for s in b.steps[:5]]  # B's own decode before it
    assert patched.steps[5].token == a.steps[5].token == "g" != b.steps[5].token
    assert patched.steps[5].prob == pytest.approx(a.steps[5].prob, abs=1e-5)  # A's distribution at that step
    head = next(s for s in sites_of(adapter, setup, ["head"]) if s.where != adapter.family.encoder_kind)
    assert len(patched_decode(adapter, setup, head).steps) >= 6  # a decoder-side head replays too


def test_a_patch_the_corrupted_decode_never_reaches_is_said():
    adapter = open_model("checkpoints/reverse")
    setup = prepare_patching(adapter, "abcdefghijkl", "abcdef", step=11)  # B's own decode ends sooner
    site = find_site(adapter, setup, {"site": "head", "where": "cross", "layer": 0, "head": 1,
                                 "position": setup.tgt[0].shape[1] - 1})
    with pytest.raises(InputError, match="never reached"):
        patched_decode(adapter, setup, site)


def test_encoder_heads_per_position_on_request():
    adapter = open_model("checkpoints/toy-en-de")
    setup = prepare_patching(adapter, "the dog sees the cat", "the man sees the cat", step=1, contrast="mann")
    frame = patch_sites(adapter, setup, [HEAD_POSITIONS]).frame
    layers, heads = adapter.head_counts()["encoder_self"]
    assert len(frame) == layers * heads * 6 and set(frame["where"]) == {"encoder_self"}
    together = patch_sites(adapter, setup, ["head"]).frame.query("where == 'encoder_self'")
    one = [p for row in (s.patches for s in sites_of(adapter, setup, [HEAD_POSITIONS]))
           for p in row if (p.index, p.head) == (0, 0)]  # head L1H1 at every position, written in one run
    metric, = patched_metrics(adapter, setup, [one])
    assert metric == pytest.approx(float(together.query("layer == 0 and head == 0")["metric"].iloc[0]), abs=1e-5)


def test_the_estimate_points_at_the_same_position_as_the_exact_run():
    adapter = open_model("checkpoints/reverse")
    setup = prepare_patching(adapter, "abcdefghijkl", "abcdefxhijkl", contrast="x")
    estimate = estimate_patching(adapter, setup, [ENCODER_OUTPUT]).frame
    exact = patch_sites(adapter, setup, [ENCODER_OUTPUT]).frame
    assert estimate.loc[0, "position"] == exact.sort_values("recovery").iloc[-1]["position"] == 6
    assert patching_agreement(estimate, exact) > 0.5


def test_an_encoder_only_model_is_told_it_has_no_answer_to_patch():
    with pytest.raises(InputError, match="no answer to patch"):
        prepare_patching(_ours("ours-encoder-only-pre"), "abcdefg", "abcxefg")
