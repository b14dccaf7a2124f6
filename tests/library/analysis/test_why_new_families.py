"""Why it looks there on the families added for long inputs (Mistral, GPT-NeoX, Phi-3, OLMo 2, Falcon, Gemma 3,
Gemma 2, gpt-oss), each tiny with its weights at a trained scale and an input longer than its sliding window: the
residual parts sum to the stream, the QK pairs plus terms sum to the model's own score (Gemma 2: before its soft-cap,
the cap named beside it; gpt-oss: the sink named), what flows into each route node sums to its output, and the
composition scores equal their full-matrix formula with every gain the path folds in."""
from __future__ import annotations

import json
import math
import random

import pytest
import torch

from tests.helpers.hf_causal_models import NEW_CAUSAL, WINDOW, build_new
from tests.helpers.path_models import _rescaled
from transformer.adapters import InspectableModel, ResidualPathError, hf_path, norm_gain
from transformer.analysis import RouteGraph, capture_path, composition_scores, qk_attribution, residual_parts
from transformer.model import Head
from transformer.store import open_model

TEXT = "a man in a blue shirt sees the dog and a woman in a red hat rides a bike down the long road to the sea"
PARALLEL = ("gpt_neox", "falcon")


@pytest.fixture(scope="module", params=NEW_CAUSAL)
def adapter(request, tmp_path_factory) -> InspectableModel:
    folder = build_new(request.param, tmp_path_factory.mktemp(request.param) / request.param, window=WINDOW)
    return _rescaled(open_model(str(folder)))


@pytest.fixture(scope="module")
def cap(adapter):
    ids = torch.tensor([adapter.tokenize_source(TEXT).ids])
    assert ids.shape[1] > 2 * WINDOW
    return capture_path(adapter, ids, ids)


def _family(adapter) -> str:
    return adapter.network.config.model_type


def test_the_parts_sum_to_the_captured_residual_at_every_layer(cap):
    streams = cap.insides.residual["decoder"]
    everywhere = list(range(streams[0].shape[1]))
    for index, stream in enumerate(streams):
        parts = residual_parts(cap, "decoder", index, everywhere)
        want = stream[0].float()
        assert ((parts.total() - want).norm(dim=-1) / want.norm(dim=-1)).max() <= 1e-4, index
    assert {"bias", "embed", "self:L1H1", "self:L1.mlp"} <= set(parts.names)


def test_pairs_plus_terms_sum_to_the_models_score(adapter, cap):
    rng = random.Random(_family(adapter))
    for layer, inputs in enumerate(cap.insides.inputs["self"]):
        for _ in range(3):
            head, query = rng.randrange(inputs.n_heads), rng.randrange(WINDOW, inputs.queries.shape[2])
            key = rng.randrange(query - WINDOW + 1, query + 1)  # inside any sliding window
            table = qk_attribution(cap, Head("self", layer, head), query, key)
            scaled = inputs.dot_products() * inputs.scale  # the model's own q and k
            pre_cap = float(scaled[0, head, query, key])
            terms = float((inputs.scores() - inputs.capped(scaled))[0, head, query, key])  # the mask
            own = pre_cap + terms
            assert abs(table.total - own) <= 1e-4 * max(1.0, abs(own)), (layer, head, query, key)
            softmax_input = float(inputs.scores()[0, head, query, key])  # the cap applied, as the model applies it
            assert abs(table.softmax_input - softmax_input) <= 1e-4 * max(1.0, abs(softmax_input))
            assert abs(pre_cap) > 1e-3


def test_a_soft_cap_is_named_and_the_table_explains_the_score_before_it(adapter, cap):
    table = qk_attribution(cap, Head("self", 1, 0), 30, 28)
    if _family(adapter) != "gemma2":
        assert table.soft_cap is None and "soft_cap" not in table.as_dict()
        return
    assert table.soft_cap == 5.0
    out = json.loads(json.dumps(table.as_dict()))
    assert out["soft_cap"]["cap"] == 5.0 and out["pre_cap_score"] == out["score"]
    assert out["softmax_input"] == pytest.approx(5.0 * math.tanh(out["score"] / 5.0), abs=1e-5)
    assert "\n" not in table.rules_line() and "before the cap" in table.rules_line()
    inputs = cap.insides.inputs["self"][1]
    scaled = (inputs.dot_products() * inputs.scale)[0].tril()  # the keys a query sees
    head, query, key = (int(i) for i in torch.unravel_index(scaled.abs().argmax(), scaled.shape))
    big = qk_attribution(cap, Head("self", 1, head), query, key)  # the largest score: the cap matters there
    assert abs(big.total - float(scaled[head, query, key])) <= 1e-4 * abs(big.total)
    assert abs(big.score - big.softmax_input) > 0.1
    assert big.softmax_input == pytest.approx(float(inputs.scores()[0, head, query, key]), abs=1e-4)


def test_sinks_and_sliding_windows_are_named_beside_the_table(adapter, cap):
    windowed = _family(adapter) in ("mistral", "phi3", "gemma3_text", "gemma2", "gpt_oss")
    table = qk_attribution(cap, Head("self", 0, 1), 40, 40 - WINDOW)  # just outside the first layer's window
    if windowed:
        assert table.window == WINDOW and table.as_dict()["sliding_window"] == WINDOW
        assert min(table.terms.values()) <= -1e30 or math.isinf(min(table.terms.values()))  # the mask hides it
    if _family(adapter) == "gpt_oss":
        sinks = adapter.network.model.layers[0].self_attn.sinks
        assert table.sink == pytest.approx(float(sinks[1].detach())) and table.as_dict()["sink"] == table.sink
        assert "sink logit" in table.rules_line()
    else:
        assert table.sink is None


def test_what_flows_into_each_route_node_sums_to_its_output(adapter, cap):
    graph = RouteGraph(cap)
    n = cap.insides.residual["decoder"][0].shape[1]
    for depth in range(1, graph.last("decoder") + 1):
        for i in range(0, n, 5):
            flow = graph.inflow(("decoder", depth, i))
            error = (flow.vectors.sum(0) - flow.output).norm() / flow.output.norm()
            assert error <= 1e-4, (depth, i)
            assert float(flow.importance.sum()) == pytest.approx(1.0, abs=1e-5)
    torch.testing.assert_close(graph.stream("decoder")[-1], cap.insides.residual["decoder"][-1][0].float())
    mlp = graph.inflow(("decoder", 2, 3))  # layer 1's MLP: in a parallel block it reads the layer's input
    source = mlp.sources[mlp.names.index("self:L1.mlp")]
    assert source == ("decoder", 0 if cap.path.parallel else 1, 3)


def _full(adapter, head: Head) -> dict[str, torch.Tensor]:
    """The head's row-vector QK and OV with full D x D matrices, the gains the path folds in applied directly."""
    path = adapter.residual_path()
    proj, sub = path.projections["self"][head.layer], path.stacks["decoder"].layers[head.layer][0]
    n, g = adapter.head_counts()["self"][1], adapter.head_groups()["self"][head.head]
    dh, d = proj.wq.shape[0] // n, proj.wq.shape[1]

    def gain(norm, size):
        found = norm_gain(norm)
        return torch.ones(size) if found is None else found

    def rows(w, i, norm):  # a query or key norm: over the whole projection (OLMo 2) or per head (Gemma 3)
        w, found = w.detach().float(), norm_gain(norm)
        if found is not None:
            w = w * (found if found.numel() == w.shape[0] else found.repeat(w.shape[0] // dh))[:, None]
        return w[i * dh:(i + 1) * dh]

    wq = rows(proj.wq, head.head, proj.q_norm) * gain(sub.norm, d)
    wk = rows(proj.wk, g, proj.k_norm) * gain(sub.norm, d)
    wv = proj.wv.detach().float()[g * dh:(g + 1) * dh]
    wo = adapter.output_projection("self", head.layer)[0].detach().float() * gain(sub.out_norm, d)[:, None]
    wo = wo[:, head.head * dh:(head.head + 1) * dh]
    return {"QK": wq.T @ wk, "OV_write": wv.T @ wo.T, "OV_read": (wv * gain(sub.norm, d)).T @ wo.T}


def test_composition_scores_equal_the_full_matrix_formula(adapter):
    frame = composition_scores(adapter)
    assert len(frame) == 16 and frame[["q", "k", "v"]].stack().between(0, 1).all()  # 4 heads x 4 later heads

    def score(a, b):
        return float((a @ b).norm() / a.norm() / b.norm())

    for _, row in frame.sample(4, random_state=0).iterrows():
        w, r = _full(adapter, Head.parse(row["from"])), _full(adapter, Head.parse(row["to"]))
        assert row["q"] == pytest.approx(score(w["OV_write"], r["QK"]), rel=1e-3, abs=1e-5)
        assert row["k"] == pytest.approx(score(w["OV_write"], r["QK"].T), rel=1e-3, abs=1e-5)
        assert row["v"] == pytest.approx(score(w["OV_write"], r["OV_read"]), rel=1e-3, abs=1e-5)


def test_a_family_outside_the_path_is_one_line():
    from types import SimpleNamespace
    with pytest.raises(ResidualPathError) as refused:
        hf_path(SimpleNamespace(config=SimpleNamespace(model_type="mamba")), "state-spaces/mamba")
    message = str(refused.value)
    assert "\n" not in message and "(mamba)" in message and "gemma2" in message and "gpt_neox" in message


@pytest.mark.parametrize("family", ["gemma2", "gpt_oss"])
def test_the_cli_says_the_cap_the_sink_and_the_window(family, tmp_path, capsys):
    from transformer.cli import main
    folder = str(build_new(family, tmp_path / family, window=WINDOW))
    ask = ["qk", folder, TEXT, "--head", "self:L1H2", "--query", "30"]
    assert main([*ask, "--key", "28", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    total = sum(p["contribution"] for p in out["pairs"]) + sum(out["terms"].values())
    assert abs(total - out["score"]) <= 1e-4 * max(1.0, abs(out["score"])) and out["sliding_window"] == WINDOW
    assert ("soft_cap" in out and out["pre_cap_score"] == out["score"]) == (family == "gemma2")
    assert ("sink" in out) == (family == "gpt_oss")
    assert main([*ask, "--key", "28"]) == 0
    said = capsys.readouterr().out.splitlines()[2]  # the line under the sum
    assert ("before the cap" in said) == (family == "gemma2") and ("sink logit" in said) == (family == "gpt_oss")
    assert main([*ask, "--key", str(30 - WINDOW)]) == 2  # 1-based: WINDOW positions before the query
    err = capsys.readouterr().err
    assert f"hidden from query 30 by the mask (its sliding window of {WINDOW})" in err and err.count("\n") == 1
    from transformer import notebook
    rows = notebook.qk(folder, TEXT, "self:L1H2", 29, 27)  # the notebook: 0-based, the same attributes
    assert rows.attrs["sliding_window"] == WINDOW and ("soft_cap" in rows.attrs) == (family == "gemma2")
    assert rows.attrs["score"] == pytest.approx(out["score"], abs=1e-5)


@pytest.mark.parametrize(("family", "extra"), [
    ("falcon", dict(new_decoder_architecture=False, multi_query=True, parallel_attn=True)),  # one key, q first
    ("falcon", dict(new_decoder_architecture=False, multi_query=False, parallel_attn=False, num_kv_heads=4)),
    ("falcon", dict(num_ln_in_parallel_attn=1)),  # one norm shared by attention and MLP
    ("gpt_neox", dict(use_parallel_residual=False)),
])
def test_other_layouts_of_the_fused_families(family, extra, tmp_path):
    """Falcon's old layouts (multi-query; per head, sequential) and one shared norm, GPT-NeoX sequential."""
    adapter = _rescaled(open_model(str(build_new(family, tmp_path / family, **extra))))
    ids = torch.tensor([adapter.tokenize_source(TEXT).ids])
    cap = capture_path(adapter, ids, ids)
    assert cap.path.parallel == (_family(adapter) in PARALLEL and extra.get("parallel_attn", True)
                                 and extra.get("use_parallel_residual", True))
    test_the_parts_sum_to_the_captured_residual_at_every_layer(cap)
    test_pairs_plus_terms_sum_to_the_models_score(adapter, cap)
    test_what_flows_into_each_route_node_sums_to_its_output(adapter, cap)


def test_a_falcon_with_alibi_is_refused_in_one_line(tmp_path):
    """Its insides cannot be reproduced exactly (Falcon builds ALiBi in bfloat16 and adds it twice): no table."""
    from transformer.adapters import HFModelError
    from transformer.analysis import decode_parts
    adapter = open_model(str(build_new("falcon", tmp_path / "falcon", alibi=True)))
    with pytest.raises(HFModelError) as refused:
        decode_parts(adapter, TEXT)
    assert "\n" not in str(refused.value) and "ALiBi" in str(refused.value)
