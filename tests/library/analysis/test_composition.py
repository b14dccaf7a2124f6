"""Composition scores (analysis.composition): equal to TransformerLens's formula computed with full d_model x d_model
matrices, between exactly the pairs where a later head reads an earlier one (an encoder head feeds a cross-attention
head's keys and values, a decoder head its queries), every family, and one pair's alone (a circuit edge's) the same;
a one-layer model is one clear line."""
from __future__ import annotations

import math

import pytest
import torch

from tests.helpers.path_models import PATH_FAMILIES, path_model
from transformer.adapters import InspectableModel, ResidualPathError, adapter_for
from transformer.analysis import composition_scores, pair_composition, strongest
from transformer.data import TaskSpec, make_task
from transformer.model import Head, build_model, default_configs


@pytest.fixture(scope="module", params=PATH_FAMILIES)
def adapter(request, tmp_path_factory) -> InspectableModel:
    return path_model(request.param, tmp_path_factory.mktemp(request.param))


def _full(adapter: InspectableModel, head: Head) -> dict[str, torch.Tensor]:
    """TransformerLens's (row-vector) OV and QK of one head, the reader's norm gains folded in."""
    path = adapter.residual_path()
    proj = path.projections[head.kind][head.layer]
    n = adapter.head_counts()[head.kind][1]
    g = adapter.head_groups()[head.kind][head.head]
    stack, sub = path.sublayer(head.kind, head.layer)
    own = path.stacks[stack].layers[head.layer][sub].norm if path.pre_norm else None
    key_norm = path.stacks["encoder"].final_norm if head.kind == "cross" else own

    def gain(norm):
        w = getattr(norm, "weight", None) if norm is not None else None
        return torch.ones(proj.wq.shape[1]) if w is None else w.detach().float()

    dh = proj.wq.shape[0] // n
    rows = lambda w, i: w.detach().float()[i * dh:(i + 1) * dh]  # noqa: E731
    def head_gain(norm):  # a per-head query or key norm (Qwen3): its gain over the head's dimensions
        return torch.ones(dh, 1) if norm is None else norm.weight.detach().float()[:, None]

    wq = rows(proj.wq, head.head) * gain(own) * head_gain(proj.q_norm)
    wk, wv = rows(proj.wk, g) * gain(key_norm) * head_gain(proj.k_norm), rows(proj.wv, g)
    wo = adapter.output_projection(head.kind, head.layer)[0].detach().float()[:, head.head * dh:(head.head + 1) * dh]
    return {"QK": wq.T @ wk, "OV_write": wv.T @ wo.T, "OV_read": (wv * gain(key_norm)).T @ wo.T}


def _score(left: torch.Tensor, right: torch.Tensor) -> float:
    return float((left @ right).norm() / left.norm() / right.norm())


def test_scores_equal_the_full_matrix_formula(adapter: InspectableModel):
    frame = composition_scores(adapter)
    for _, row in frame.sample(min(len(frame), 6), random_state=0).iterrows():
        writer, reader = _full(adapter, Head.parse(row["from"])), _full(adapter, Head.parse(row["to"]))
        want = {"q": _score(writer["OV_write"], reader["QK"]), "k": _score(writer["OV_write"], reader["QK"].T),
                "v": _score(writer["OV_write"], reader["OV_read"])}
        for mode, value in want.items():
            if not math.isnan(row[mode]):
                assert row[mode] == pytest.approx(value, rel=1e-3, abs=1e-5), (row["from"], row["to"], mode)
        one = pair_composition(adapter, Head.parse(row["from"]), Head.parse(row["to"]))  # a circuit edge's number
        for mode, value in one.items():
            assert value == pytest.approx(row[mode], rel=1e-4, abs=1e-6, nan_ok=True), (row["from"], row["to"], mode)
    last = frame.iloc[0]
    with pytest.raises(ResidualPathError, match="does not read"):  # the other way round: not read
        pair_composition(adapter, Head.parse(last["to"]), Head.parse(last["from"]))


def test_exactly_the_pairs_that_read_each_other(adapter: InspectableModel):
    frame = composition_scores(adapter)
    counts = adapter.head_counts()
    assert frame[["q", "k", "v"]].stack().dropna().between(0, 1).all()
    stack = {"encoder_self": "encoder", "decoder_self": "decoder", "cross": "decoder", "self": "decoder"}
    order = {"encoder_self": 0, "self": 0, "decoder_self": 0, "cross": 1}  # a layer's sublayers, in order

    def reads(w: Head, r: Head) -> bool:
        if r.kind == "cross" and w.kind == "encoder_self":
            return True
        return stack[w.kind] == stack[r.kind] and (w.layer, order[w.kind]) < (r.layer, order[r.kind])

    for _, row in frame.iterrows():
        w, r = Head.parse(row["from"]), Head.parse(row["to"])
        assert reads(w, r)
        if r.kind == "cross" and w.kind == "encoder_self":  # across the stack: keys and values only
            assert math.isnan(row["q"]) and not math.isnan(row["k"]) and not math.isnan(row["v"])
        elif r.kind == "cross":  # a decoder head feeds a cross-attention's queries only
            assert math.isnan(row["k"]) and math.isnan(row["v"]) and not math.isnan(row["q"])
        else:
            assert not row[["q", "k", "v"]].isna().any()
    heads = [Head(k, layer, h) for k, (n, m) in counts.items() for layer in range(n) for h in range(m)]
    assert len(frame) == sum(reads(w, r) for w in heads for r in heads)
    top = strongest(frame, "k", 3)
    assert list(top.columns) == ["from", "to", "k"] and top["k"].is_monotonic_decreasing


def test_a_model_with_one_attention_layer_is_one_clear_line():
    task = make_task(TaskSpec(name="reverse", n_train=20, n_valid=5, min_len=4, max_len=8))
    cfg, _ = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                             model_overrides=dict(d_model=16, d_ff=32, n_heads=2, n_decoder_layers=1,
                                                  max_len=32, architecture="decoder-only"))
    one = adapter_for(build_model(cfg).eval(), task.src_tokenizer, task.tgt_tokenizer, name="one-layer")
    with pytest.raises(ResidualPathError, match="no head reads another head's output"):
        composition_scores(one)


def test_scores_are_kept_per_weights_and_made_again_when_they_change():
    adapter = path_model("ours-pre", None)
    first = composition_scores(adapter)
    first.loc[0, "q"] = -1.0  # a caller's copy: what is kept does not change
    again = composition_scores(adapter)
    assert again.loc[0, "q"] != -1.0
    with torch.no_grad():
        adapter.network.encoder[1].self_attn.in_proj.weight.mul_(2.0).add_(0.1)
    changed = composition_scores(adapter)
    assert not changed[["q", "k", "v"]].fillna(0).equals(again[["q", "k", "v"]].fillna(0))
