"""Inside one head, per family: the computation's softmax is the captured attention, its head output the model's own,
the per-key vectors alpha_j W_O^h v_j add up to the head's share of the attention output, the contributions are
their norms (the mean of heads: the norm of the mean vector), and a head the model has not got is one clear error."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import CAUSAL
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_masked_models import MASKED
from tests.helpers.hf_masked_models import build as build_masked
from tests.helpers.hf_tiny_models import FAMILIES, MORE_FAMILIES
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.our_models import OURS, TEXT, _inputs, _ours
from transformer.adapters import InspectableModel
from transformer.analysis import (
    HeadSelectionError,
    contribution_maps,
    head_computation,
    head_slice,
    key_vectors,
    mean_contribution_map,
)
from transformer.store import open_model

ROPE = ("llama", "qwen2", "modernbert")  # the families here that rotate their queries and keys


@pytest.fixture(scope="module", params=[*OURS, *FAMILIES, *MORE_FAMILIES, *CAUSAL, *MASKED])
def case(request, tmp_path_factory):
    family = request.param
    if family in OURS:
        adapter = _ours(family)
    else:
        build = build_causal if family in CAUSAL else build_masked if family in MASKED else build_seq2seq
        adapter = open_model(str(build(family, tmp_path_factory.mktemp(family) / family)))
    if family in MASKED:  # encoder-only: one stack reads the text, nothing is decoded
        return adapter, adapter.insides(torch.tensor([adapter.tokenize_source(TEXT).ids]))
    return adapter, adapter.insides(*_inputs(adapter))


def _kind(adapter: InspectableModel) -> str:
    """The causal kind, or an encoder-only model's one kind."""
    return adapter.family.decoder_kind or adapter.family.encoder_kind


def _every_head(adapter: InspectableModel):
    for kind, (n_layers, n_heads) in adapter.head_counts().items():
        yield kind, n_layers - 1, n_heads - 1


def test_the_softmax_of_one_head_is_the_map_and_its_output_the_models(case):
    adapter, insides = case
    for kind, layer, head in _every_head(adapter):
        n_queries = insides.attentions[kind][layer].shape[2]
        for query in (0, n_queries - 1):
            c = head_computation(adapter, insides, kind, layer, head, query)
            captured = insides.attentions[kind][layer][0, head, query].float()
            torch.testing.assert_close(c.weights, captured, atol=1e-5, rtol=0)
            assert c.model_head_output is not None
            torch.testing.assert_close(c.head_output, c.model_head_output, atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(c.dots * c.scale + sum(c.terms.values(), torch.zeros(c.n_keys)), c.scores)
            assert c.kv_head == adapter.head_groups()[kind][head]


def test_the_heads_shares_and_the_bias_are_the_attention_output(case):
    """The model's own attention output = sum of every head's share + the output bias."""
    adapter, insides = case
    for kind, layer, _ in _every_head(adapter):
        inputs = insides.inputs[kind][layer]
        query = inputs.queries.shape[2] - 1
        _weight, bias = adapter.output_projection(kind, layer)
        shares = sum(head_computation(adapter, insides, kind, layer, h, query).share for h in range(inputs.n_heads))
        out = shares + (0 if bias is None else bias.detach().float())
        expected = inputs.output[0, query].float()
        assert (out - expected).abs().max() <= 1e-5 * max(expected.norm(), 1.0)


def test_the_per_key_vectors_add_up_to_the_heads_share(case):
    adapter, insides = case
    for kind, layer, head in _every_head(adapter):
        inputs = insides.inputs[kind][layer]
        query = inputs.queries.shape[2] - 1
        vectors = key_vectors(adapter, insides, kind, layer, head, query)  # (Tk, D)
        weight, _ = adapter.output_projection(kind, layer)
        model_z = inputs.model_head_outputs()[0, head, query].float()
        share = head_slice(weight.detach().float(), head, inputs.n_heads) @ model_z  # from the model's own z
        assert (vectors.sum(0) - share).abs().max() <= 1e-5 * max(share.norm(), 1.0)
        c = head_computation(adapter, insides, kind, layer, head, query)
        torch.testing.assert_close(vectors.norm(dim=-1), c.contributions, atol=1e-5, rtol=1e-4)
        maps = contribution_maps(inputs, weight)
        torch.testing.assert_close(maps[0, head, query], c.contributions, atol=1e-5, rtol=1e-4)


def test_the_mean_of_heads_is_the_norm_of_the_mean_vector(case):
    adapter, insides = case
    kind = _kind(adapter)
    inputs = insides.inputs[kind][0]
    query = inputs.queries.shape[2] - 1
    mean = sum(key_vectors(adapter, insides, kind, 0, h, query) for h in range(inputs.n_heads)) / inputs.n_heads
    weight, _ = adapter.output_projection(kind, 0)
    torch.testing.assert_close(mean_contribution_map(inputs, weight)[0, query], mean.norm(dim=-1), atol=1e-5,
                               rtol=1e-4)


def test_rope_models_show_queries_and_keys_before_rotation(case, request):
    adapter, insides = case
    inputs = insides.inputs[_kind(adapter)][0]
    rope = request.node.callspec.params["case"] in ROPE
    assert (inputs.unrotated is not None) == rope
    if rope:
        q, k = inputs.unrotated
        assert q.shape == inputs.queries.shape and k.shape == inputs.keys.shape
        assert not torch.allclose(q[:, :, 1:], inputs.queries[:, :, 1:])  # position 0 is not rotated
        torch.testing.assert_close(q.norm(dim=-1), inputs.queries.norm(dim=-1), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(q[:, :, 0], inputs.queries[:, :, 0], atol=1e-5, rtol=1e-5)  # angle 0: as it was
        c = head_computation(adapter, insides, _kind(adapter), 0, 0, 1)  # and the computation view carries them
        assert c.query_unrotated is not None and c.keys_unrotated is not None


@pytest.mark.parametrize("where, message", [
    ({"kind": "nonsense"}, "no attention kind 'nonsense'"),
    ({"layer": 99}, "no layer 99"),
    ({"head": 99}, "no head 99"),
    ({"query": 999}, "no query position 999"),
    ({"layer": -1}, "no layer -1"),
])
def test_a_head_the_model_has_not_got_is_one_clear_message(case, where, message):
    adapter, insides = case
    chosen = {"kind": _kind(adapter), "layer": 0, "head": 0, "query": 0} | where
    with pytest.raises(HeadSelectionError, match=message):
        head_computation(adapter, insides, **chosen)
    assert issubclass(HeadSelectionError, ValueError)


def test_one_heads_contribution_map_is_its_slice_of_every_heads(case):
    from transformer.analysis import head_contribution_map
    adapter, insides = case
    for kind, layer, head in _every_head(adapter):
        inputs = insides.inputs[kind][layer]
        weight, _ = adapter.output_projection(kind, layer)
        torch.testing.assert_close(head_contribution_map(inputs, weight, head),
                                   contribution_maps(inputs, weight)[:, head], atol=1e-5, rtol=1e-4)


EXPECTED_POSITIONS = {"marian": "sinusoidal", "bart": "learned", "mbart": "learned", "t5": "relative buckets",
                      "mt5": "relative buckets", "gpt2": "learned", "llama": "rotary", "qwen2": "rotary",
                      "bert": "learned", "roberta": "learned", "distilbert": "learned", "modernbert": "rotary"}


def test_the_positions_picture_is_the_models_own(case, request):
    from transformer.adapters import position_scheme
    from transformer.charts import position_frame, position_picture
    adapter, _ = case
    family = request.node.callspec.params["case"]
    scheme = position_scheme(adapter)
    assert scheme is not None and scheme.sentence
    assert scheme.kind == EXPECTED_POSITIONS.get(family, "sinusoidal")  # ours: the paper's sinusoidal table
    owner = dict(adapter.network.named_buffers()) | {n: p for n, p in adapter.network.named_parameters()}
    stored = owner.get(scheme.where, owner.get(f"{scheme.where}.weight"))
    if stored is not None:  # the picture's numbers are the module's own
        torch.testing.assert_close(scheme.table, stored.float())
    if family == "bart":
        assert scheme.offset == 2  # BART's learned table starts two rows in
    frame = position_frame(scheme)
    assert len(frame) > 0 and position_picture(scheme, adapter.name).to_dict(validate=False)["title"]


def test_a_padded_batch_masks_the_padding_as_in_training(case):
    """The input padded beside a longer one: no real token reads the padding, its own weights are those it has alone,
    and the mask picture shows the mask the model added."""
    from transformer.analysis import batch_mask
    from transformer.charts import mask_picture
    adapter, _ = case
    short, longer = "the cat sat", "the cat sat on the mat with a hat by the door"
    m = batch_mask(adapter, short, longer)
    start, stop = m.padding
    hidden = m.mask < -1e4
    assert stop > start and hidden[:start, start:stop].all()  # every real query: the padding hidden
    assert m.key_tokens[start:stop] == ("<pad>",) * (stop - start)
    ids = [list(adapter.tokenize_source(t).ids) for t in (short, longer)]
    batch, alone = adapter.padded_insides(ids), adapter.padded_insides(ids[:1])
    torch.testing.assert_close(batch.attentions[m.kind][0][0, :, :start, :start],
                               alone.attentions[m.kind][0][0, :, :start, :start], atol=1e-5, rtol=1e-4)
    rows = next(iter(mask_picture(m.mask, m.query_tokens, m.key_tokens, "m").to_dict()["datasets"].values()))
    assert sum(r["added"] == "hidden (−∞)" for r in rows) == int(hidden.sum())
