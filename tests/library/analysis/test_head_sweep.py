"""The batched sweep equals ablating one head at a time, bf16 stays within its stated tolerance, the one-pass
estimate is the derivative it claims, and progress can be followed and cancelled."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_tiny_models import build
from tests.helpers.tiny_models import tiny_reverse_model
from transformer.adapters import HFSeq2Seq, adapter_for
from transformer.analysis import (
    BF16_TOLERANCE,
    Cancelled,
    all_heads,
    bf16_bound,
    checked_estimate,
    estimate_agreement,
    estimate_head_effects,
    head_mask,
    output_ids,
    sweep_heads,
)
from transformer.analysis.patching.ablation import output_log_prob, teacher_inputs
from transformer.analysis.patching.head_sweep import masked_log_probs
from transformer.decode import greedy_decode

TEXT = "the dog sees a red house near the tree"


@pytest.fixture(scope="module", params=["native", "bart", "marian", "t5"])
def case(request, tmp_path_factory):
    if request.param == "native":
        adapter, text = adapter_for(*tiny_reverse_model(seed=0)), "abcdefg"
    else:
        adapter, text = HFSeq2Seq.load(str(build(request.param, tmp_path_factory.mktemp(request.param)))), TEXT
    return adapter, text, output_ids(greedy_decode(adapter, text, max_steps=6, stop_at_end=False))


def test_batched_sweep_equals_one_head_at_a_time(case):
    adapter, text, out = case
    sweep = sweep_heads(adapter, text, out, batch=5)
    src, tgt_in = teacher_inputs(adapter, text, out)
    targets = torch.tensor(out)
    assert sweep.complete and len(sweep.frame) == len(all_heads(adapter))
    assert sweep.base_log_prob == pytest.approx(output_log_prob(adapter, src, tgt_in, targets), abs=1e-4)
    for row in sweep.frame.itertuples():
        one = output_log_prob(adapter, src, tgt_in, targets, head_mask(adapter, [next(h for h in all_heads(adapter)
                                                                          if h.label == row.label)]))
        assert row.log_prob == pytest.approx(one, abs=1e-4), row.label


def test_bf16_sweep_stays_within_the_stated_tolerance(case):
    adapter, text, out = case
    exact = sweep_heads(adapter, text, out).frame.set_index("label")["drop"]
    fast = sweep_heads(adapter, text, out, dtype=torch.bfloat16).frame.set_index("label")["drop"]
    error = (fast - exact[fast.index]).abs()
    bound = exact[fast.index].map(lambda drop: bf16_bound(drop, len(out)))
    assert (error <= bound).all(), (error - bound).max()
    assert BF16_TOLERANCE == 0.05


def test_estimate_is_the_derivative_of_log_p_in_each_heads_scale(case):
    adapter, text, out = case
    estimate = estimate_head_effects(adapter, text, out)
    assert len(estimate) == len(all_heads(adapter))
    src, tgt_in = teacher_inputs(adapter, text, out)
    targets, counts, eps = torch.tensor(out), adapter.head_counts(), 1e-3
    for row in (estimate.iloc[0], estimate.iloc[-1]):
        scale = torch.ones(2, *counts[row["kind"]])
        scale[1, row["layer"], row["head"]] = 1 - eps
        with adapter.running():
            lp = masked_log_probs(adapter, src, tgt_in, targets, {row["kind"]: scale.double().float()})
        assert float(lp[0] - lp[1]) / eps == pytest.approx(row["estimate"], rel=0.05, abs=2e-3)
    assert all(p.grad is None for p in adapter.network.parameters())


def test_checked_estimate_measures_the_top_heads_exactly(case):
    adapter, text, out = case
    checked = checked_estimate(adapter, text, out, top_k=3)
    assert checked["drop"].notna().sum() == 3
    exact = sweep_heads(adapter, text, out).frame
    for row in checked.dropna().itertuples():
        assert row.drop == pytest.approx(float(exact[exact.label == row.label]["drop"].iloc[0]), abs=1e-4)
    assert -1.0 <= estimate_agreement(checked.drop(columns="drop"), exact) <= 1.0


def test_progress_reaches_one_and_a_cancel_stops_the_sweep():
    adapter = adapter_for(*tiny_reverse_model(seed=0))
    out = output_ids(greedy_decode(adapter, "abcdefg", max_steps=4, stop_at_end=False))
    seen: list[float] = []
    sweep_heads(adapter, "abcdefg", out, batch=4, on_fraction=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) == -(-len(all_heads(adapter)) // 4)

    def cancel(fraction: float) -> None:
        if fraction > 0.3:
            raise Cancelled

    with pytest.raises(Cancelled):
        sweep_heads(adapter, "abcdefg", out, batch=4, on_fraction=cancel)
    with pytest.raises(Cancelled):
        checked_estimate(adapter, "abcdefg", out, progress=cancel)


def test_attribution_in_chunks_equals_all_at_once_and_reports_progress():
    from transformer.analysis import attribute_in_chunks, attribute_steps, head_report

    adapter = adapter_for(*tiny_reverse_model(seed=0))
    out = output_ids(greedy_decode(adapter, "abcdefg", max_steps=5, stop_at_end=False))
    whole = attribute_steps(adapter, "abcdefg", out, n_steps=8)
    seen: list[float] = []
    chunked = attribute_in_chunks(adapter, "abcdefg", out, n_steps=8, max_rows=16, progress=seen.append)
    assert len(seen) == 3 and seen[-1] == 1.0
    for a, b in zip(whole, chunked, strict=True):
        assert torch.allclose(a.source, b.source, atol=1e-5) and a.step == b.step
    fractions: list[float] = []
    head_report(adapter, "abcdefg", ig_steps=4, progress=fractions.append)
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and any(f == 0.5 for f in fractions)
