"""The insides every family hands over (`InspectableModel.insides`, `output_head`) are the model's own: per family,
softmax(scale * q.k + the additive terms) equals the captured attention, the output function of the last residual
equals the logits, and nothing of the capture stays on the shared model."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import CAUSAL
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_masked_models import MASKED
from tests.helpers.hf_masked_models import build as build_masked
from tests.helpers.hf_tiny_models import FAMILIES, MORE_FAMILIES
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.our_models import OURS, _inputs, _ours
from transformer.adapters import InspectableModel, hf_capture
from transformer.store import open_model


@pytest.fixture(scope="module", params=[*OURS, *FAMILIES, *MORE_FAMILIES, *CAUSAL, *MASKED])
def adapter(request, tmp_path_factory) -> InspectableModel:
    family = request.param
    if family in OURS:
        return _ours(family)
    build = build_causal if family in CAUSAL else build_masked if family in MASKED else build_seq2seq
    return open_model(str(build(family, tmp_path_factory.mktemp(family) / family)))


def test_softmax_of_the_captured_scores_is_the_captured_attention(adapter: InspectableModel):
    src, tgt = _inputs(adapter)
    insides = adapter.insides(src, tgt)
    assert set(insides.inputs) == set(adapter.family.kinds)
    for kind, (n_layers, n_heads) in adapter.head_counts().items():
        assert len(insides.inputs[kind]) == n_layers
        for layer, inputs in enumerate(insides.inputs[kind]):
            captured = insides.attentions[kind][layer]
            assert inputs.queries.shape[1] == n_heads
            torch.testing.assert_close(inputs.pattern(), captured.float(), atol=1e-5, rtol=0)
            assert inputs.groups == adapter.head_groups()[kind]


def test_the_output_function_of_the_last_residual_is_the_logits(adapter: InspectableModel):
    src, tgt = _inputs(adapter)
    insides = adapter.insides(src, tgt)
    residual = insides.residual[adapter.family.output_stack]
    assert len(residual) == adapter.head_counts()[adapter.family.output_kind][0] + 1  # the embeddings, then every layer
    with torch.no_grad():
        logits = adapter.output_head(residual[-1])
    torch.testing.assert_close(logits, insides.logits.float(), atol=1e-5, rtol=1e-5)
    if adapter.family.encoder_kind is not None:
        assert len(insides.residual["encoder"]) == adapter.head_counts()[adapter.family.encoder_kind][0] + 1


def test_the_insides_logits_are_the_teacher_forced_logits(adapter: InspectableModel):
    src, tgt = _inputs(adapter)
    with adapter.running():
        logits = adapter.forward(src, tgt).logits
    rows = slice(src.shape[1],
                 None) if adapter.family.prompt_in_decoder and adapter.source == "checkpoint" else slice(None)
    torch.testing.assert_close(adapter.insides(src, tgt).logits[:, rows], logits[:, rows], atol=1e-5, rtol=1e-5)


def test_each_family_adds_what_it_really_adds(adapter: InspectableModel):
    src, tgt = _inputs(adapter)
    insides = adapter.insides(src, tgt)
    t5 = getattr(getattr(adapter, "model", None), "model_dim", None) is not None and adapter.source == "huggingface"
    decoder_self = insides.inputs[adapter.family.output_kind][0]
    assert decoder_self.scale == pytest.approx(1.0 if t5 else decoder_self.queries.shape[-1] ** -0.5)
    assert ("position_bias" in decoder_self.terms) == t5
    scores = decoder_self.scores()
    if not adapter.family.causal(adapter.family.output_kind):  # encoder-only: every query sees every key (a full layer)
        assert bool((scores > -1e3).all())
        return
    # the causal rule is in the scores: a query's later keys get no weight, and that comes from the terms
    later = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(scores.shape[-1] - scores.shape[-2] + 1)
    assert bool((scores[..., later] < -1e4).all())
    assert bool((decoder_self.dot_products()[..., later] * decoder_self.scale > -1e3).all())


def test_grouped_query_heads_read_their_shared_key_head(adapter: InspectableModel):
    (_, n_heads), = [adapter.head_counts()[adapter.family.output_kind]]
    inputs = adapter.insides(*_inputs(adapter)).inputs[adapter.family.output_kind][0]
    n_kv = inputs.keys.shape[1]
    assert inputs.groups == tuple(h // (n_heads // n_kv) for h in range(n_heads))
    torch.testing.assert_close(inputs.head_keys()[:, -1], inputs.keys[:, inputs.groups[-1]])


def test_named_points_read_the_captured_tensors(adapter: InspectableModel):
    insides = adapter.insides(*_inputs(adapter))
    kind, stack = adapter.family.output_kind, adapter.family.output_stack
    assert insides.point(f"{kind}.0.q") is insides.inputs[kind][0].queries
    assert insides.point(f"{stack}.1.resid") is insides.residual[stack][1]
    torch.testing.assert_close(insides.point(f"{kind}.0.pattern"), insides.inputs[kind][0].pattern())
    with pytest.raises(KeyError, match="no captured point"):
        insides.point(f"{kind}.0.nonsense")
    assert insides.nbytes() > 0


def test_nothing_of_the_capture_stays_on_the_model(adapter: InspectableModel):
    with adapter.running():  # a first plain call: transformers installs its own output-capturing hooks once a model
        adapter.forward(*_inputs(adapter))
    before = {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks)) for name, m in adapter.network.named_modules()}
    adapter.insides(*_inputs(adapter))
    after = {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks)) for name, m in adapter.network.named_modules()}
    assert after == before
    assert hf_capture._CALLS == {}
    assert not adapter.network.training


def test_head_ablation_reaches_the_insides(adapter: InspectableModel):
    """Heads switched off change what later layers read, never the switched-off layer's own softmax inputs."""
    kind = adapter.family.output_kind
    n_layers, n_heads = adapter.head_counts()[kind]
    mask = {kind: torch.ones(n_layers, n_heads)}
    mask[kind][0] = 0
    src, tgt = _inputs(adapter)
    plain, ablated = adapter.insides(src, tgt), adapter.insides(src, tgt, head_mask=mask)
    torch.testing.assert_close(ablated.inputs[kind][0].queries, plain.inputs[kind][0].queries)
    stack = adapter.family.output_stack
    assert not torch.allclose(ablated.residual[stack][1], plain.residual[stack][1])
