"""The patching estimate, one function at every length: a decode step's runs fed through the attention store's fused
forward (the prefix in blocks, the step's position with gradients) and whole through the plain forward (one block)
give the same estimate of every head and residual site (1e-6), on a Hugging Face causal model and on ours; a
recorded setup read through the store gives the whole run's estimate at the step's position."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import SIZE, build, lines
from transformer.analysis import HEADS, RESIDUAL_STREAM, PatchingEstimate, StepRuns, estimate_patching, prepare_patching
from transformer.decode import InputError, greedy_decode
from transformer.store import open_model

ATOL = 1e-6
KEYS = ["site", "where", "layer", "head", "position"]


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    adapter = open_model(str(build("qwen2", tmp_path_factory.mktemp("qwen2") / "qwen2",
                                   size={**SIZE, "positions": 512})))
    with torch.no_grad():  # a random model's output is nearly uniform: sharpen it, so that an edit moves the metric
        adapter.network.lm_head.weight.mul_(10)
    return adapter


def _both(adapter, runs) -> tuple[PatchingEstimate, PatchingEstimate]:
    return estimate_patching(adapter, runs, keep="store"), estimate_patching(adapter, runs, keep="maps")


def _assert_equal(stored: PatchingEstimate, plain: PatchingEstimate) -> None:
    assert stored.clean_metric == pytest.approx(plain.clean_metric, abs=ATOL)
    assert stored.corrupted_metric == pytest.approx(plain.corrupted_metric, abs=ATOL)
    assert abs(stored.gap) > 1e-3  # the edit moves the metric: the estimates are not all zero
    merged = stored.frame.merge(plain.frame, on=KEYS, suffixes=("_store", "_maps"))
    assert len(merged) == len(stored.frame) > 0
    assert merged["estimate_store"].abs().max() > 1e-4
    assert merged["estimate_store"].tolist() == pytest.approx(merged["estimate_maps"].tolist(), abs=ATOL)


def test_the_step_estimate_is_the_same_through_the_store_and_through_the_plain_forward(qwen):
    clean = qwen.tokenize_source("\n".join(lines(6))).ids
    assert len(clean) > 200
    corrupted = [*clean[:-3], clean[5], clean[6], clean[-1]]  # the two tokens before the step's replaced
    stored, plain = _both(qwen, StepRuns(tuple(clean), tuple(corrupted), token=clean[-1]))
    _assert_equal(stored, plain)
    assert len(plain.frame) == 2 * 4 + 3  # every head and every residual (embeddings, after each layer) at the step
    assert set(plain.frame["position"]) == {len(clean) - 1}
    assert plain.head_grid().shape == (2, 4)


def test_ours_with_its_source_ids_is_the_same_through_both():
    adapter = open_model("checkpoints/reverse-decoder-only")
    src, edited = adapter.tokenize_source("abcdefghij"), adapter.tokenize_source("abcdefghjj")
    output = [s.token_id for s in greedy_decode(adapter, "abcdefghij", max_steps=3, keep="maps").steps]
    clean, corrupted = [*adapter.decoder_prefix(src), *output[:2]], [*adapter.decoder_prefix(edited), *output[:2]]
    _assert_equal(*_both(adapter, StepRuns(tuple(clean), tuple(corrupted), output[2],
                                           n_source=(len(src.ids), len(edited.ids)))))
    # a recorded setup: through the store only the step's position is a site, its estimates the whole run's there
    setup = prepare_patching(adapter, "abcdefghij", "abcdefghjj", step=2, output=output)
    stored, whole = _both(adapter, setup)
    assert len(whole.frame) > len(stored.frame) and set(stored.frame["site"]) == {HEADS, RESIDUAL_STREAM}
    _assert_equal(stored, whole)
    with pytest.raises(InputError, match="reads the same"):
        estimate_patching(adapter, StepRuns(tuple(clean), tuple(clean), output[2]))
