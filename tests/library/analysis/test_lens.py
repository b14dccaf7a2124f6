"""The logit lens (`transformer.analysis.why.lens`) per family: the last layer's lens is the decode's own distribution,
every layer's lens is that layer's residual through the model's output function in a teacher-forced pass, and the
DecoderLens (the decoder reading an earlier encoder layer) reads the encoder output itself at the last layer."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import CAUSAL
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import FAMILIES, MORE_FAMILIES
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.our_models import OURS, _ours
from transformer.adapters import InspectableModel
from transformer.analysis import LensError, every_step_lens, lens_dict, lens_grid, lens_log_probs, step_lens
from transformer.decode import InputError, greedy_decode, read_source
from transformer.store import open_model

DECODING = [name for name in OURS if "encoder-only" not in name]  # the lens reads a decoder's steps


@pytest.fixture(scope="module", params=[*DECODING, *FAMILIES, *MORE_FAMILIES, *CAUSAL])
def adapter(request, tmp_path_factory) -> InspectableModel:
    family = request.param
    if family in DECODING:
        return _ours(family)
    build = build_causal if family in CAUSAL else build_seq2seq
    return open_model(str(build(family, tmp_path_factory.mktemp(family) / family)))


def _text(adapter: InspectableModel) -> str:
    return "a man sees the dog" if adapter.source == "huggingface" else "abcdefg"


def test_the_last_layers_lens_is_the_steps_own_distribution(adapter: InspectableModel):
    result = greedy_decode(adapter, _text(adapter), max_steps=4, top_k=3, residuals=True)
    lenses = every_step_lens(adapter, result, k=3)
    n_layers = adapter.head_counts()[adapter.family.decoder_kind][0]
    for step, lens in zip(result.steps, lenses, strict=True):
        assert len(lens.layers) == n_layers + 1  # the embeddings, then every layer
        last = lens.layers[-1]
        assert [t for t, _ in last.top_k] == [t for t, _ in step.top_k]
        assert [p for _, p in last.top_k] == pytest.approx([p for _, p in step.top_k], abs=1e-5)
        assert last.prob == pytest.approx(step.prob, abs=1e-5)
        assert last.rank == 1 and last.kl == pytest.approx(0.0, abs=1e-6)
        assert all(p.kl >= 0 and p.entropy >= 0 for p in lens.layers)
    grid = lens_grid(lenses)
    assert grid.ranks[-1] == (1,) * len(result.steps)
    assert grid.to_frame().shape[0] == (n_layers + 1) * len(result.steps)


def test_each_layers_lens_is_its_residual_through_the_output_function(adapter: InspectableModel):
    """The recorded rows are the residual stream of a teacher-forced pass over the decoded output, and a layer's
    lens is softmax(output_head(row)) over the emittable tokens, the banned ones left out."""
    result = greedy_decode(adapter, _text(adapter), max_steps=3, residuals=True)
    source = read_source(adapter, _text(adapter))
    prefix = adapter.decoder_prefix(source)
    ids = [*prefix, *(s.token_id for s in result.steps[:-1])]
    insides = adapter.insides(torch.tensor([source.ids]), torch.tensor([ids]))
    for t in range(len(result.steps)):
        position = len(prefix) - 1 + t
        teacher = torch.stack([r[0, position] for r in insides.residual["decoder"]])  # (L + 1, D)
        torch.testing.assert_close(result.residuals.decoder[t].float(), teacher.float(), atol=1e-4, rtol=1e-4)
        with adapter.running():
            logits = adapter.output_head(teacher).float()
        banned = result.residuals.banned[t]
        logp = logits.index_fill(-1, banned, float("-inf")).log_softmax(-1)
        lens = step_lens(adapter, result, t)
        for layer, prediction in enumerate(lens.layers):
            assert prediction.prob == pytest.approx(float(logp[layer, result.steps[t].token_id].exp()), abs=1e-4)
            assert prediction.top_k[0][1] == pytest.approx(float(logp[layer].exp().max()), abs=1e-4)
        torch.testing.assert_close(lens_log_probs(adapter, result.residuals.decoder[t], banned).exp(), logp.exp(),
                                   atol=1e-4, rtol=0)


def test_the_decoder_lens_at_the_last_encoder_layer_is_the_plain_decode(adapter: InspectableModel):
    if adapter.family.encoder_kind is None:
        with pytest.raises(InputError, match="has no encoder"):
            greedy_decode(adapter, _text(adapter), encoder_layer=0)
        return
    n = adapter.head_counts()[adapter.family.encoder_kind][0]
    plain = greedy_decode(adapter, _text(adapter), max_steps=5, residuals=True)
    last = greedy_decode(adapter, _text(adapter), max_steps=5, encoder_layer=n, residuals=True)
    assert last.output_tokens == plain.output_tokens
    assert [s.prob for s in last.steps] == pytest.approx([s.prob for s in plain.steps], abs=1e-5)
    torch.testing.assert_close(last.residuals.decoder, plain.residuals.decoder, atol=1e-5, rtol=1e-5)
    early = greedy_decode(adapter, _text(adapter), max_steps=1, encoder_layer=0, residuals=True)
    assert early.encoder_layer == 0 and early.to_dict()["encoder_layer"] == 0
    # the first layer's cross-attention read other vectors: what it wrote differs
    assert not torch.allclose(early.residuals.decoder[0, 1], plain.residuals.decoder[0, 1], atol=1e-6)
    torch.testing.assert_close(early.residuals.decoder[0, 0], plain.residuals.decoder[0, 0])  # same embeddings
    for bad in (-1, n + 1):
        with pytest.raises(InputError, match=f"layer 0 .* to {n}"):
            greedy_decode(adapter, _text(adapter), encoder_layer=bad)


def test_recording_leaves_nothing_on_the_model_and_changes_nothing(adapter: InspectableModel):
    before = {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks)) for name, m in adapter.network.named_modules()}
    recorded = greedy_decode(adapter, _text(adapter), max_steps=4, residuals=True)
    after = {name: (dict(m._forward_hooks), dict(m._forward_pre_hooks)) for name, m in adapter.network.named_modules()}
    assert after == before
    plain = greedy_decode(adapter, _text(adapter), max_steps=4)
    assert recorded.output_tokens == plain.output_tokens
    assert [s.prob for s in recorded.steps] == [s.prob for s in plain.steps]  # bit-identical
    assert plain.residuals is None


def test_bad_requests_get_a_message():
    adapter = _ours("ours-pre")
    plain = greedy_decode(adapter, "abc", max_steps=2)
    with pytest.raises(LensError, match="residuals=True"):
        step_lens(adapter, plain, 0)
    recorded = greedy_decode(adapter, "abc", max_steps=2, residuals=True)
    with pytest.raises(LensError, match="steps 1 to"):
        step_lens(adapter, recorded, len(recorded.steps))
    with pytest.raises(LensError, match="tokens per layer"):
        step_lens(adapter, recorded, 0, k=0)
    with pytest.raises(InputError, match="not 'x'"):
        greedy_decode(adapter, "abc", encoder_layer="x")


def test_the_lens_dict_is_plain_json():
    import json
    adapter = _ours("ours-post")
    result = greedy_decode(adapter, "abcd", max_steps=3, residuals=True)
    data = json.loads(json.dumps(lens_dict(every_step_lens(adapter, result, k=2))))
    assert data["layers"][0] == "embeddings" and len(data["layers"]) == 4
    assert len(data["steps"]) == len(result.steps)
    assert data["steps"][0]["layers"][-1]["rank"] == 1
    assert len(data["steps"][0]["layers"][0]["top_k"]) == 2


def test_a_teacher_forced_lens_ends_in_the_passs_own_predictions(adapter: InspectableModel):
    from transformer.decode import teacher_forced
    reference = "the dog sees" if adapter.source == "huggingface" else "gfedcba"
    plain = teacher_forced(adapter, _text(adapter), reference)
    result = teacher_forced(adapter, _text(adapter), reference, residuals=True)
    assert result.output_tokens == plain.output_tokens
    for step, lens in zip(result.steps, every_step_lens(adapter, result, k=3), strict=True):
        last = lens.layers[-1]
        assert last.rank == 1 and last.prob == pytest.approx(step.prob, abs=1e-5)
        assert [t for t, _ in last.top_k] == [t for t, _ in step.top_k[:3]]
