"""A decode's insides line up with its trace: the capture's maps, cut to the trace's rows and keys, are the trace's
weights (greedy and teacher-forced, encoder-decoder and decoder-only, our models and Hugging Face ones), and a new
head is read from the capture."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import build as build_seq2seq
from transformer.analysis import (
    capture_decode,
    computation_at,
    contributions,
    trace_view,
)
from transformer.decode import greedy_decode, teacher_forced
from transformer.store import open_model

CASES = ("checkpoints/reverse", "checkpoints/reverse-decoder-only", "bart", "mbart", "gpt2")


@pytest.fixture(scope="module", params=CASES)
def adapter(request, tmp_path_factory):
    name = request.param
    if name.startswith("checkpoints/"):
        return open_model(name)
    build = build_causal if name == "gpt2" else build_seq2seq
    return open_model(str(build(name, tmp_path_factory.mktemp(name) / name)))


def _text(adapter) -> str:
    return "the dog sees a cat" if adapter.source == "huggingface" else "abcdef"


@pytest.mark.parametrize("mode", ["greedy", "teacher-forced"])
def test_the_capture_of_a_decode_is_its_trace(adapter, mode):
    text = _text(adapter)
    reference = "a cat sees" if adapter.source == "huggingface" else "fedcba"
    result = greedy_decode(adapter, text, top_k=3) if mode == "greedy" else teacher_forced(adapter, text, reference,
                                                                                           top_k=3)
    captured = capture_decode(adapter, result, reference if mode != "greedy" else None)
    trace = result.trace
    for kind in trace.kinds:
        queries, keys = captured.tokens(kind)
        for layer in range(trace.n_layers(kind)):
            shown = trace_view(captured, kind, captured.insides.attentions[kind][layer][0, 0].float())
            torch.testing.assert_close(shown, trace.matrix(kind, layer, 0).float(), atol=1e-5, rtol=0)
        assert len(queries) == captured.insides.attentions[kind][0].shape[2]
        assert len(keys) == captured.insides.attentions[kind][0].shape[3]
        last = trace.axis_sizes(kind)[0] - 1
        c = computation_at(adapter, captured, kind, 0, 0, last)
        torch.testing.assert_close(trace_view(captured, kind, c.weights[None].expand(len(queries), -1))[0],
                                   trace.matrix(kind, 0, 0)[last].float(), atol=1e-5, rtol=0)
        # the map the page shows: the query's row is the computation's
        one = contributions(adapter, captured, kind, 0, 0)
        torch.testing.assert_close(one[captured.query_of_row(kind, last)], c.contributions, atol=1e-5, rtol=1e-4)
        mean = trace_view(captured, kind, contributions(adapter, captured, kind, 0, None))
        assert mean.shape == trace.matrix(kind, 0, None).shape and bool((mean >= 0).all())


def test_every_stage_is_a_small_chart_of_the_models_numbers(adapter):
    from transformer.charts import STAGES, stage_charts
    result = greedy_decode(adapter, _text(adapter), top_k=3)
    captured = capture_decode(adapter, result)
    kind = adapter.family.decoder_kind
    c = computation_at(adapter, captured, kind, 0, 0, result.trace.axis_sizes(kind)[0] - 1)
    charts = stage_charts(c, captured.tokens(kind)[1])
    assert set(STAGES) <= set(charts)
    assert any(name.startswith("term:") for name in charts)  # the causal mask, as the model adds it
    spec = charts["weights"].to_dict()
    rows = next(rows for rows in spec["datasets"].values() if len(rows) == c.n_keys)
    torch.testing.assert_close(torch.tensor([row["value"] for row in rows]), c.weights, atol=1e-6, rtol=0)


def test_the_mask_picture_is_what_the_model_added(adapter):
    from transformer.analysis import mask_matrix
    from transformer.charts import mask_picture
    captured = capture_decode(adapter, greedy_decode(adapter, _text(adapter), top_k=3))
    kind = adapter.family.decoder_kind
    mask = mask_matrix(captured, kind)
    n_q, n_k = mask.shape
    hidden = mask < -1e4
    later = torch.ones(n_q, n_k, dtype=torch.bool).triu(n_k - n_q + 1)
    assert torch.equal(hidden, later)  # the causal rule, from the adapter, not redrawn
    q_tokens, k_tokens = captured.tokens(kind)
    rows = next(iter(mask_picture(mask, q_tokens, k_tokens, "m").to_dict()["datasets"].values()))
    assert sum(r["added"].startswith("hidden") for r in rows) == int(hidden.sum())
    if adapter.family.encoder_kind is not None:
        assert mask_matrix(captured, adapter.family.encoder_kind) is None or not bool(
            (mask_matrix(captured, adapter.family.encoder_kind) < -1e4).any())  # one input: no padding


def test_an_encoder_only_models_capture_is_its_map(tmp_path):
    from tests.helpers.hf_masked_models import build as build_masked
    from transformer.decode import masked_decode
    adapter = open_model(str(build_masked("bert", tmp_path / "bert")))
    result = masked_decode(adapter, f"the dog {adapter.tokenizer.mask_token} a cat")
    captured = capture_decode(adapter, result)
    kind = adapter.family.encoder_kind
    for layer in range(result.trace.n_layers(kind)):
        torch.testing.assert_close(trace_view(captured, kind, captured.insides.attentions[kind][layer][0, 1].float()),
                                   result.trace.matrix(kind, layer, 1).float(), atol=1e-5, rtol=0)
    c = computation_at(adapter, captured, kind, 0, 1, 2)
    torch.testing.assert_close(c.weights, result.trace.matrix(kind, 0, 1)[2].float(), atol=1e-5, rtol=0)
