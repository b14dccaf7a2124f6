"""Source or prefix: each step's shares agree with the heads' outputs the model itself computed (per family), a step
whose cross-attention sits on </s> is detached and uniform weights are not, and a corpus is ranked most detached
first."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from tests.helpers.hf_tiny_models import FAMILIES, build
from tests.helpers.tiny_models import tiny_reverse_model
from transformer.adapters import HFSeq2Seq, adapter_for
from transformer.analysis import capture_decode, rank_corpus, reliance, wasserstein_to_uniform
from transformer.analysis.why.reliance import detached_steps, omitted_tokens
from transformer.decode import InputError, greedy_decode
from transformer.model import AttentionMaps

TEXTS = {"ours": "abcdefg", "hf": "the dog sees a big red house"}


@pytest.fixture(scope="module", params=("ours", *FAMILIES))
def adapter(request, tmp_path_factory):
    if request.param == "ours":
        model, src, tgt = tiny_reverse_model(seed=3)
        return adapter_for(model, src, tgt, name="tiny reverse")
    return HFSeq2Seq.load(str(build(request.param, tmp_path_factory.mktemp(request.param))))


def _text(adapter) -> str:
    return TEXTS["hf" if adapter.source == "huggingface" else "ours"]


def _shares_from_heads(adapter, result) -> torch.Tensor:
    """Each step's source share from a fresh forward's per-head outputs z_h and W_O's slices, summed per layer."""
    captured = capture_decode(adapter, result)
    rows = torch.arange(len(result.steps)) + captured.first
    norms = {}
    for kind in (adapter.family.cross_kind, adapter.family.decoder_kind):
        per_layer = []
        for layer, inputs in enumerate(captured.insides.inputs[kind]):
            z = inputs.model_head_outputs()[0].float()  # (H, T, Dv) as the model computed them
            weight, _ = adapter.output_projection(kind, layer)
            dv = z.shape[-1]
            written = sum(z[h] @ weight[:, h * dv:(h + 1) * dv].detach().float().T for h in range(z.shape[0]))
            per_layer.append(written.norm(dim=-1)[rows])
        norms[kind] = torch.stack(per_layer)
    c, p = norms[adapter.family.cross_kind], norms[adapter.family.decoder_kind]
    return c.sum(0) / (c + p).sum(0)


def test_each_steps_source_and_prefix_shares_come_from_the_heads_outputs_the_model_computed(adapter):
    result = greedy_decode(adapter, _text(adapter), max_steps=6)
    found = reliance(adapter, result)
    assert [s.step for s in found.steps] == list(range(1, len(result.steps) + 1))
    expected = _shares_from_heads(adapter, result)
    got = torch.tensor([s.source for s in found.steps])
    assert torch.allclose(got, expected, atol=1e-4), (got, expected)
    assert all(abs(s.source + s.prefix - 1) < 1e-6 and 0 < s.source < 1 for s in found.steps)


def test_a_step_whose_cross_attention_sits_on_the_end_token_is_detached_and_uniform_weights_are_not():
    n = 8  # the source's last token is </s>
    on_end = torch.zeros(1, n)
    on_end[0, -1] = 1.0
    uniform = torch.full((1, n), 1 / n)
    distance, mass, detached = detached_steps(torch.cat([on_end, uniform]), specials=[n - 1])
    assert detached.tolist() == [True, False]
    assert distance[0] == pytest.approx(0.5) and distance[1] == pytest.approx(0.0, abs=1e-6)
    assert mass.tolist() == pytest.approx([1.0, 1 / n])
    first_word = torch.zeros(1, n)
    first_word[0, 0] = 1.0  # aligned to the sentence's first word: far from uniform, but not on </s>
    assert not detached_steps(first_word, specials=[n - 1])[2].item()


def test_the_wasserstein_distance_to_uniform_is_the_area_between_the_cumulative_distributions():
    weights = torch.tensor([[0.5, 0.0, 0.5], [0.0, 1.0, 0.0]])
    # positions 0, 1/2, 1: CDFs (.5, .5) vs (1/3, 2/3): |1/6| + |1/6| over steps of 1/2
    assert wasserstein_to_uniform(weights).tolist() == pytest.approx([1 / 6, 1 / 3])


def test_a_decode_whose_cross_attention_was_put_on_end_tokens_is_flagged_at_every_step_but_the_last(adapter):
    result = greedy_decode(adapter, _text(adapter), max_steps=5)
    captured = capture_decode(adapter, result)
    kind = adapter.family.cross_kind
    maps = list(captured.insides.attentions.by_kind[kind])
    end = torch.zeros_like(maps[-1])
    end[..., -1] = 1.0  # every source ends with </s>
    maps[-1] = end
    by_kind = {**captured.insides.attentions.by_kind, kind: tuple(maps)}
    insides = dataclasses.replace(captured.insides, attentions=AttentionMaps(by_kind=by_kind))
    found = reliance(adapter, result, dataclasses.replace(captured, insides=insides))
    assert captured.source_tokens[-1] == "</s>"
    ends = {adapter.id_to_token(i) for i in adapter.end_ids}
    emitting = [s.token in ends for s in found.steps]  # the step that emits </s> reads the source's </s> by design
    assert [s.detached for s in found.steps] == [not e for e in emitting] and not all(emitting)
    assert found.wass_to_unif == pytest.approx(0.5)
    assert not any(s.detached for s in reliance(adapter, result, captured).steps if s.special_mass < 0.5)


def test_source_tokens_no_step_attends_to_most_are_omitted_and_detached_steps_do_not_count():
    weights = torch.tensor([[0.7, 0.1, 0.1, 0.1], [0.1, 0.6, 0.2, 0.1], [0.0, 0.0, 0.1, 0.9]])
    keep = torch.tensor([True, True, False])  # the last step is detached
    assert omitted_tokens(weights, [3], keep) == [2]


def test_a_corpus_is_ranked_by_distance_to_uniform_and_an_unreadable_line_keeps_its_place(adapter):
    rows = rank_corpus(adapter, ["dog " * 3000, _text(adapter)], max_steps=4)
    assert [r["line"] for r in rows] == [2, 1]
    assert "error" in rows[1] and rows[0]["wass_to_unif"] >= 0


def test_a_model_without_cross_attention_gets_one_clear_message():
    from tests.helpers.our_models import _ours

    causal = _ours("ours-decoder-only-pre")
    with pytest.raises(InputError, match="no cross-attention"):
        reliance(causal, greedy_decode(causal, "abc", max_steps=2))
