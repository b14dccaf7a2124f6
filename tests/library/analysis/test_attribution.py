"""Attribution: Integrated Gradients' completeness, steps batched == one at a time, causal zeros, no hook or
gradient left on the shared model, and the attention/attribution agreement figures."""
import pytest
import torch

from tests.helpers.tiny_models import tiny_reverse_model
from transformer.adapters import adapter_for
from transformer.analysis import (
    IG_STEPS,
    Attribution,
    agreement_frame,
    agreement_frames,
    agreement_summary,
    attribute_step,
    attribute_steps,
    baseline_score,
    output_ids,
    spearman,
)
from transformer.decode import InputError, greedy_decode

TEXT = "abcdefgh"


@pytest.fixture(scope="module")
def setup():
    model, src_tok, tgt_tok = tiny_reverse_model(seed=1)
    result = greedy_decode(adapter_for(model, src_tok, tgt_tok), TEXT, max_steps=8, stop_at_end=False)
    return adapter_for(model, src_tok, tgt_tok), src_tok, result


# IG's completeness at IG_STEPS Gauss-Legendre points: sum of attributions == score(input) - score(baseline)
# within 0.03 nats + 2 % of the difference. Observed: at most 0.017 nats on this random model (the ReLUs' kinks
# keep the error from shrinking much with more points: 0.017 at 64 points), 0.05 nats of 8.8 on toy-en-de.
COMPLETENESS_RTOL, COMPLETENESS_ATOL = 0.02, 0.03


@pytest.mark.parametrize("step", [0, 3, 7])
def test_integrated_gradients_is_complete(setup, step):
    model, st, result = setup
    out = output_ids(result)
    attr = attribute_step(model, TEXT, out, step)
    assert attr.source.shape == (len(result.trace.source_tokens),) and attr.target.shape == (step + 1,)
    difference = attr.score - baseline_score(model, TEXT, out, step)
    total = float(attr.source.sum() + attr.target.sum())
    assert abs(difference) > 0.05  # the test means something: the baseline scores differently
    assert total == pytest.approx(difference, rel=COMPLETENESS_RTOL, abs=COMPLETENESS_ATOL)
    assert attr.score == pytest.approx(torch.log(torch.tensor(result.steps[step].prob)).item(), abs=1e-4)


def test_all_steps_at_once_equal_one_step_at_a_time(setup):
    model, st, result = setup
    out = output_ids(result)
    together = attribute_steps(model, TEXT, out)
    assert [a.step for a in together] == list(range(len(out)))
    for step in (1, 5):
        alone = attribute_step(model, TEXT, out, step)
        torch.testing.assert_close(together[step].source, alone.source, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(together[step].target, alone.target, rtol=1e-4, atol=1e-5)


def test_gradient_x_input_gives_one_number_per_token(setup):
    model, st, result = setup
    attr = attribute_step(model, TEXT, output_ids(result), 2, method="gradient_x_input")
    assert attr.source.shape == (len(result.trace.source_tokens),) and attr.target.shape == (3,)
    assert attr.source.abs().sum() > 0
    shares = attr.source_share() + attr.target_share()
    assert sum(shares) == pytest.approx(1.0) and min(shares) >= 0


def test_the_shared_model_keeps_no_hook_no_gradient_and_its_mode(setup):
    adapter, st, result = setup
    intact = attribute_step(adapter, TEXT, output_ids(result), 1)
    assert all(p.grad is None for p in adapter.model.parameters())
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in adapter.model.modules())
    adapter.model.train()  # dropout is switched off for the attribution and the mode given back
    try:
        again = attribute_step(adapter, TEXT, output_ids(result), 1)
        assert adapter.model.training
    finally:
        adapter.model.eval()
    torch.testing.assert_close(again.source, intact.source)


def test_bad_steps_and_inputs_are_refused(setup):
    model, st, result = setup
    out = output_ids(result)
    with pytest.raises(InputError, match="step 9 does not exist"):
        attribute_step(model, TEXT, out, 8)
    with pytest.raises(InputError, match="no output"):
        attribute_steps(model, TEXT, [])
    with pytest.raises(InputError, match="empty"):
        attribute_step(model, " ", out, 0)
    with pytest.raises(ValueError, match="unknown attribution method"):
        attribute_step(model, TEXT, out, 0, method="saliency")


def test_spearman_matches_its_definition():
    a = torch.tensor([[0.1, 0.5, 0.2, 0.9], [1.0, 2.0, 3.0, 4.0]])
    b = torch.tensor([[1.0, 3.0, 2.0, 4.0], [4.0, 3.0, 2.0, 1.0]])
    torch.testing.assert_close(spearman(a, b), torch.tensor([1.0, -1.0], dtype=torch.float64))
    c = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    d = torch.tensor([[2.0, 1.0, 4.0, 3.0]])  # d^2 sum = 4: rho = 1 - 6*4/(4*15) = 0.6
    assert float(spearman(c, d)[0]) == pytest.approx(0.6)


def test_agreement_is_one_for_a_head_that_attends_where_attribution_points(setup):
    model, st, result = setup
    attrs = attribute_steps(model, TEXT, output_ids(result), n_steps=IG_STEPS)
    cross = result.trace.cross.clone()
    magnitude = torch.stack([a.source.abs() for a in attrs])  # (T, S)
    cross[0, 1] = magnitude / magnitude.sum(-1, keepdim=True)  # layer 1 head 2 now attends exactly like that
    frame = agreement_frame(cross, attrs)
    row = frame[(frame["layer"] == 0) & (frame["head"] == 1)].iloc[0]
    assert row["spearman"] == pytest.approx(1.0) and row["top1"] == pytest.approx(1.0)
    assert agreement_summary(frame)["best_head"] == "L1H2"
    assert len(frame) == 2 * 5 and frame["spearman"].between(-1, 1).all()


def _attr(step: int, target: list[float]) -> Attribution:
    return Attribution("integrated_gradients", step, torch.tensor([1.0, 0.0]), torch.tensor(target), 0.0)


def test_decoder_self_agreement_of_constructed_heads_is_known():
    """Head 1 ranks the decoder inputs as attribution does, head 2 in the opposite order: Spearman 1 and -1."""
    attrs = [_attr(0, [0.3]), _attr(1, [-0.2, 0.8]), _attr(2, [0.5, 0.1, -0.9])]  # |.| ranks what matters
    weights = torch.zeros(1, 2, 3, 3)  # (layers, heads, T, T), causal
    weights[0, 0] = torch.tensor([[1.0, 0, 0], [0.3, 0.7, 0], [0.35, 0.05, 0.6]])  # same order as |attribution|
    weights[0, 1] = torch.tensor([[1.0, 0, 0], [0.9, 0.1, 0], [0.3, 0.6, 0.1]])  # the opposite order
    frame = agreement_frame(weights, attrs, kind="decoder_self").set_index("label")
    assert frame.loc["L1H1", "spearman"] == pytest.approx(1.0) and frame.loc["L1H1", "top1"] == pytest.approx(1.0)
    assert frame.loc["L1H2", "spearman"] == pytest.approx(-1.0) and frame.loc["L1H2", "top1"] == pytest.approx(0.0)
    assert agreement_summary(frame.reset_index())["best_head"] == "L1H1"
    # step 1 has only the start token to look at: it is left out (with it, head 2 would score top-1 1/3, not 0)
    with pytest.raises(ValueError, match="at least two steps"):
        agreement_frame(weights, attrs[:1], kind="decoder_self")
    with pytest.raises(ValueError, match="'encoder_self'"):
        agreement_frame(weights, attrs, kind="encoder_self")


def test_decoder_self_agreement_lines_up_with_the_traced_decoder_inputs(setup):
    """A head of the real trace set to the |decoder-input attribution| of each step agrees perfectly: the trace's
    decoder axis and the attribution's decoder inputs are the same tokens in the same order."""
    model, st, result = setup
    attrs = attribute_steps(model, TEXT, output_ids(result), n_steps=IG_STEPS)
    weights = result.trace.decoder_self.clone()
    for a in attrs:
        row = torch.zeros(weights.shape[-1])
        row[: a.step + 1] = a.target.abs() / a.target.abs().sum()
        weights[1, 0, a.step] = row
    frame = agreement_frame(weights, attrs, kind="decoder_self")
    row = frame[(frame["layer"] == 1) & (frame["head"] == 0)].iloc[0]
    assert row["spearman"] == pytest.approx(1.0) and row["top1"] == pytest.approx(1.0)
    assert len(frame) == 2 * 5 and frame["spearman"].between(-1, 1).all()


def test_both_kinds_are_compared_and_a_single_step_output_has_no_decoder_self_rows(setup):
    model, st, result = setup
    out = output_ids(result)
    frames = agreement_frames(result.trace, attribute_steps(model, TEXT, out, n_steps=8))
    assert frames.groupby("kind").size().to_dict() == {"cross": 2 * 5, "decoder_self": 2 * 5}
    first = agreement_frames(result.trace, attribute_steps(model, TEXT, out, steps=[0], n_steps=8))
    assert set(first["kind"]) == {"cross"}
