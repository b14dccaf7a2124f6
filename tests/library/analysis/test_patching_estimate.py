"""The patching estimate at a decode step, one function at every length: the prefixes fed through the attention
store's fused forward and through the plain forward give the same estimate of every head and residual site (1e-6), on
a Hugging Face causal model and on ours."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import SIZE, build, lines
from transformer.analysis import StepPatching, step_patching_estimate
from transformer.decode import greedy_decode
from transformer.store import open_model

ATOL = 1e-6


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    adapter = open_model(str(build("qwen2", tmp_path_factory.mktemp("qwen2") / "qwen2",
                                   size={**SIZE, "positions": 512})))
    with torch.no_grad():  # a random model's output is nearly uniform: sharpen it, so that an edit moves the metric
        adapter.network.lm_head.weight.mul_(10)
    return adapter


def _both(adapter, clean: list[int], corrupted: list[int], token: int, **kw) -> tuple[StepPatching, StepPatching]:
    return (step_patching_estimate(adapter, clean, corrupted, token, keep="store", **kw),
            step_patching_estimate(adapter, clean, corrupted, token, keep="maps", **kw))


def _assert_equal(stored: StepPatching, plain: StepPatching) -> None:
    assert stored.clean_metric == pytest.approx(plain.clean_metric, abs=ATOL)
    assert stored.corrupted_metric == pytest.approx(plain.corrupted_metric, abs=ATOL)
    assert abs(stored.gap) > 1e-3  # the edit moves the metric: the estimates are not all zero
    keys = ["site", "layer", "head"]
    merged = stored.frame.merge(plain.frame, on=keys, suffixes=("_store", "_maps"))
    assert len(merged) == len(stored.frame) == len(plain.frame)
    assert merged["estimate_store"].abs().max() > 1e-4
    assert merged["estimate_store"].tolist() == pytest.approx(merged["estimate_maps"].tolist(), abs=ATOL)


def test_the_step_estimate_is_the_same_through_the_store_and_through_the_plain_forward(qwen):
    clean = qwen.tokenize_source("\n".join(lines(6))).ids
    assert len(clean) > 200
    corrupted = [*clean[:-3], clean[5], clean[6], clean[-1]]  # the two tokens before the step's replaced
    _assert_equal(*_both(qwen, clean, corrupted, token=clean[-1]))


def test_ours_with_its_source_ids_is_the_same_through_both():
    adapter = open_model("checkpoints/reverse-decoder-only")
    src, edited = adapter.tokenize_source("abcdefghij"), adapter.tokenize_source("abcdefghjj")
    output = [s.token_id for s in greedy_decode(adapter, "abcdefghij", max_steps=3, keep="maps").steps]
    clean, corrupted = [*adapter.decoder_prefix(src), *output[:2]], [*adapter.decoder_prefix(edited), *output[:2]]
    _assert_equal(*_both(adapter, clean, corrupted, output[2], n_source=len(src.ids)))
