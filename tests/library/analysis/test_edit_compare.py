"""Edit and compare: one model on an input and its edit, per family. The probabilities shown are the decodes' own,
the aligned maps hold each side's real weights at the aligned tokens, an inserted token is its own row and column,
and the heads are ranked by how much their attention moved."""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.hf_causal_models import CAUSAL
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import FAMILIES
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.our_models import _ours
from transformer.adapters import InspectableModel
from transformer.analysis import CHANGED, INSERTED, compare_edit
from transformer.decode import InputError
from transformer.store import open_model

OURS = ("ours-pre", "ours-decoder-only-post")


@pytest.fixture(scope="module", params=[*OURS, *FAMILIES, *CAUSAL])
def adapter(request, tmp_path_factory) -> InspectableModel:
    family = request.param
    if family in OURS:
        return _ours(family)
    build = build_causal if family in CAUSAL else build_seq2seq
    return open_model(str(build(family, tmp_path_factory.mktemp(family) / family)))


def _texts(adapter: InspectableModel) -> tuple[str, str]:
    return ("abcdefg", "abxdefg") if adapter.source == "checkpoint" else ("the dog sees a red house",
                                                                          "the cat sees a house")


def test_each_step_shows_the_decodes_own_probabilities(adapter):
    a, b = _texts(adapter)
    c = compare_edit(adapter, a, b, max_steps=6)
    both = c.steps.dropna(subset=["prob_a", "prob_b"])
    for row in both.itertuples():
        assert row.prob_a == pytest.approx(c.a.steps[row.step_a - 1].prob, abs=1e-5)
        assert row.prob_b == pytest.approx(c.b.steps[row.step_b - 1].prob, abs=1e-5)
    assert (c.steps["kl"].dropna() >= 0).all()
    same = c.steps[c.steps["status"] == "same"]
    assert (same["token_a"] == same["token_b"]).all()


def test_the_aligned_maps_hold_each_sides_weights(adapter):
    a, b = _texts(adapter)
    c = compare_edit(adapter, a, b, max_steps=6)
    for kind, diff in c.differences.items():
        layers, heads = diff.a.shape[:2]
        assert (layers, heads) == tuple(c.a.trace.weights(kind).shape[:2])
        rows = [i for i, s in enumerate(diff.query_status) if s != INSERTED]
        cols = [j for j, s in enumerate(diff.key_status) if s != INSERTED]
        np.testing.assert_allclose(diff.a[:, :, rows][:, :, :, cols], c.a.trace.weights(kind).numpy(), atol=1e-6)
        assert not np.isnan(diff.a[:, :, rows][:, :, :, cols]).any()
    ranked = c.ranking
    assert len(ranked) == sum(d.a.shape[0] * d.a.shape[1] for d in c.differences.values())
    assert ranked["mean_abs"].is_monotonic_decreasing


def test_an_inserted_word_is_its_own_row_and_column():
    adapter = open_model("checkpoints/toy-en-de")
    c = compare_edit(adapter, "the dog sees the cat", "the big dog sees the cat")
    encoder = c.differences["encoder_self"]
    assert encoder.query_tokens == ("the", "+big", "dog", "sees", "the", "cat", "</s>")
    assert encoder.query_status[1] == INSERTED and np.isnan(encoder.a[:, :, 1]).all()
    # a column of A's attention to "dog" is compared with B's attention to "dog", not to "big"
    np.testing.assert_allclose(encoder.a[0, 0, 0, 2], c.a.trace.weights("encoder_self")[0, 0, 0, 1].item())
    np.testing.assert_allclose(encoder.b[0, 0, 0, 2], c.b.trace.weights("encoder_self")[0, 0, 0, 2].item())
    assert c.first_divergence == 1 and c.steps.loc[1, "status"] == INSERTED


def test_a_swapped_character_marks_the_first_divergence():
    adapter = open_model("checkpoints/reverse")
    c = compare_edit(adapter, "abcdefgh", "abcxefgh")
    assert c.steps.loc[c.first_divergence, "status"] == CHANGED
    assert (c.steps.loc[c.first_divergence, "token_a"], c.steps.loc[c.first_divergence, "token_b"]) == ("d", "x")
    assert c.steps.loc[c.first_divergence, "kl"] > 1.0


@pytest.mark.parametrize("b, message", [("", "empty"), ("abcdef ", "the same")])
def test_an_empty_or_identical_edit_is_refused(b, message):
    with pytest.raises(InputError, match=message):
        compare_edit(open_model("checkpoints/reverse"), "abcdef", b)


def test_block_copied_maps_equal_gathered_ones(monkeypatch):
    """An insertion and a deletion: the aligned maps copied as blocks of positions in order are the gathered ones."""
    from transformer.analysis.compare import edit_compare
    adapter = open_model("checkpoints/toy-en-de")
    texts = "the dog sees the cat", "the big dog sees cat"
    blocks = compare_edit(adapter, *texts)
    monkeypatch.setattr(edit_compare, "MAX_BLOCKS", 0)
    gathered = compare_edit(adapter, *texts)
    for kind, diff in blocks.differences.items():
        assert "inserted" in diff.query_status or kind == "decoder_self"
        np.testing.assert_array_equal(diff.a, gathered.differences[kind].a)
        np.testing.assert_array_equal(diff.b, gathered.differences[kind].b)
