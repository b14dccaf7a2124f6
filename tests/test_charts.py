"""Tests for chart builders: the data, axes, tooltips, masks and selections a user sees in each chart."""
from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from transformer import charts
from transformer.config import default_configs
from transformer.decoding import greedy_decode
from transformer.model import Seq2SeqTransformer
from transformer.tasks import make_task
from transformer.trace import AttentionTrace


def _random_trace(src: list[str], tgt: list[str], layers: int = 2, heads: int = 3, seed: int = 0) -> AttentionTrace:
    g = torch.Generator().manual_seed(seed)
    s, t = len(src), len(tgt)

    def weights(q: int, k: int) -> torch.Tensor:
        return torch.softmax(torch.randn(layers, heads, q, k, generator=g), -1)

    causal = torch.ones(t, t).tril()
    dec = weights(t, t) * causal
    dec = dec / dec.sum(-1, keepdim=True)
    return AttentionTrace(tuple(src), tuple(tgt), weights(s, s), dec, weights(t, s))


@pytest.fixture(scope="module")
def model_trace() -> AttentionTrace:
    """Trace of greedy decoding "abca" with an untrained reversal model (real tokenizer, </s> appended)."""
    torch.manual_seed(0)
    task = make_task("reverse", n_train=100, n_valid=10)
    model_cfg, _ = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size)
    model = Seq2SeqTransformer(model_cfg)
    return greedy_decode(model, task.src_tokenizer, task.tgt_tokenizer, "abca", max_steps=6).trace


@pytest.fixture
def trace() -> AttentionTrace:
    return _random_trace(["the", "cat", "sat", "</s>"], ["<s>", "die", "katze"])


def _data(chart, layer: int = 0) -> pd.DataFrame:
    """Data behind one layer of a layered chart (Altair hoists data all layers share to the top)."""
    own = chart.layer[layer].data
    return own if isinstance(own, pd.DataFrame) else chart.data


def _heat(chart) -> tuple[pd.DataFrame, dict]:
    """The heatmap layer's data and its encoding spec."""
    return _data(chart), chart.layer[0].to_dict()["encoding"]


def test_cross_heatmap_has_one_cell_per_query_key_pair_with_labelled_axes(trace):
    data, enc = _heat(charts.attention_heatmap(trace, "cross", 1, 2))
    assert len(data) == 3 * 4  # T x S
    assert {"query_index", "query_token", "key_index", "key_token", "weight", "masked"} <= set(data.columns)
    assert enc["y"]["field"] == "query_index" and enc["x"]["field"] == "key_index"
    assert enc["y"]["axis"]["title"] == "query: decoder input (target)"
    assert enc["x"]["axis"]["title"] == "key: source token"
    assert {t["field"] for t in enc["tooltip"]} >= {"query_token", "key_token", "weight_text", "query_index",
                                                   "key_index"}
    row = data[(data.query_index == 2) & (data.key_index == 1)].iloc[0]
    assert (row.query_token, row.key_token) == ("katze", "cat")
    assert row.weight == pytest.approx(float(trace.cross[1, 2, 2, 1]))
    assert row.weight_text == f"{row.weight:.3f}"


def test_repeated_source_tokens_keep_separate_columns(model_trace):
    data, enc = _heat(charts.attention_heatmap(model_trace, "cross", 0, 0))
    assert model_trace.source_tokens == ("a", "b", "c", "a", "</s>")
    assert sorted(data["key_index"].unique()) == [0, 1, 2, 3, 4]
    assert enc["x"]["scale"]["domain"] == [0, 1, 2, 3, 4]
    assert '["a", "b", "c", "a", "</s>"]' in enc["x"]["axis"]["labelExpr"]
    assert len(data) == len(model_trace.target_tokens) * 5


def test_decoder_self_attention_marks_the_future_as_masked_and_cross_does_not(trace):
    data, enc = _heat(charts.attention_heatmap(trace, "decoder_self", 0, 0))
    assert data["masked"].tolist() == (data["key_index"] > data["query_index"]).tolist()
    assert data["masked"].any()
    assert set(data.loc[data["masked"], "weight_text"]) == {"masked"}
    assert enc["color"]["condition"] == {"test": "datum.masked", "value": charts.MASKED_COLOR}
    cross, _ = _heat(charts.attention_heatmap(trace, "cross", 0, 0))
    assert not cross["masked"].any()


def test_no_head_means_the_mean_over_heads_and_says_so(trace):
    chart = charts.attention_heatmap(trace, "encoder_self", 1)
    data, _ = _heat(chart)
    expected = trace.encoder_self[1].mean(0).flatten()
    assert torch.allclose(torch.tensor(data["weight"].to_numpy()), expected, atol=1e-6)
    assert "mean of 3 heads" in chart.to_dict()["title"]["text"]


def test_colour_scale_is_fixed_to_0_1_unless_asked_to_fit_the_data(trace):
    _, fixed = _heat(charts.attention_heatmap(trace, "cross", 0, 0))
    assert fixed["color"]["scale"]["domain"] == [0.0, 1.0]
    _, fitted = _heat(charts.attention_heatmap(trace, "cross", 0, 0, fixed_scale=False))
    w = trace.cross[0, 0]
    assert fitted["color"]["scale"]["domain"] == pytest.approx([float(w.min()), float(w.max())])


def test_step_through_draws_rows_up_to_the_step_on_a_fixed_axis(trace):
    chart = charts.attention_heatmap(trace, "cross", 0, 0, max_row=1, highlight_row=1, gold=[(0, 2), (1, 1), (2, 0)])
    data, enc = _heat(chart)
    assert sorted(data["query_index"].unique()) == [0, 1]
    assert enc["y"]["scale"]["domain"] == [0, 1, 2]  # the axis does not shrink
    gold = _data(chart, 1)
    assert list(zip(gold.query_index, gold.key_index)) == [(0, 2), (1, 1)]  # row 2 is not drawn yet
    assert _data(chart, 2)["query_index"].tolist() == [1]
    with pytest.raises(IndexError):
        charts.attention_heatmap(trace, "cross", 0, 0, highlight_row=3)


def test_grid_shows_every_layer_and_head_plus_the_mean(trace):
    chart = charts.attention_grid(trace, "decoder_self")
    data = chart.data
    assert len(data) == 2 * (3 + 1) * 3 * 3  # layers x (heads + mean) x T x T
    panels = set(zip(data["layer"], data["head"]))
    assert panels == {(layer, head) for layer in range(2) for head in (0, 1, 2, charts.MEAN_HEAD)}
    spec = chart.to_dict()
    assert spec["facet"]["sort"] == ["L1 H1", "L1 H2", "L1 H3", "L1 mean", "L2 H1", "L2 H2", "L2 H3", "L2 mean"]
    assert spec["columns"] == 4
    (param,) = [p for p in spec["params"] if p["name"] == "cell"]
    assert param["select"]["type"] == "point" and param["select"]["fields"] == ["layer", "head"]
    mean = data[(data["layer"] == 1) & (data["head"] == charts.MEAN_HEAD)]["weight"].to_numpy()
    assert torch.allclose(torch.tensor(mean), trace.decoder_self[1].mean(0).flatten(), atol=1e-6)


def test_grid_layer_subset_step_limit_and_refusals(trace):
    data = charts.attention_grid(trace, "cross", layers=[1], max_row=0).data
    assert set(data["layer"]) == {1} and set(data["query_index"]) == {0}
    assert len(data) == (3 + 1) * 1 * 4
    with pytest.raises(IndexError):
        charts.attention_grid(trace, "cross", layers=[2])
    long_trace = _random_trace([f"w{i}" for i in range(300)], ["<s>"] + [f"v{i}" for i in range(299)], heads=4)
    with pytest.raises(charts.ChartTooLargeError, match="fewer layers"):
        charts.attention_grid(long_trace, "encoder_self")


def test_selected_panel_reads_streamlit_selection_state():
    assert charts.selected_panel({"selection": {"cell": [{"layer": 1, "head": 2}]}}) == (1, 2)
    assert charts.selected_panel({"selection": {"cell": [{"layer": 0, "head": -1}]}}) == (0, None)
    assert charts.selected_panel({"selection": {"cell": {}}}) is None  # nothing clicked yet
    assert charts.selected_panel(None) is None


def test_streamlit_accepts_the_grid_as_a_selectable_chart():
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        import streamlit as st
        import torch as t

        from transformer import charts as c
        from transformer.trace import AttentionTrace as Trace

        w = t.full((1, 2, 2, 2), 0.5)
        tr = Trace(("a", "</s>"), ("<s>", "a"), w, w, w)
        event = st.altair_chart(c.attention_grid(tr, "cross"), on_select="rerun", key="grid")
        st.write(c.selected_panel(event))

    at = AppTest.from_function(page).run(timeout=30)
    assert not at.exception
    assert at.session_state["grid"]["selection"] == {"cell": {}}


def test_strips_shade_each_token_by_its_weight():
    chart = charts.source_strip(["the", "cat", "the"], [0.1, 0.7, 0.2], title="step 2")
    data = _data(chart)
    assert data["token"].tolist() == ["the", "cat", "the"] and data["position"].tolist() == [0, 1, 2]
    assert data["weight"].tolist() == [0.1, 0.7, 0.2]
    spec = chart.to_dict()
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == [0.0, 1.0]
    assert spec["layer"][1]["mark"]["type"] == "text"
    assert _data(charts.decoder_row_chart(["<s>", " "], [0.5, 0.5]))["token"].tolist() == ["<s>", "␣"]
    with pytest.raises(ValueError, match="2 tokens but 3 weights"):
        charts.source_strip(["a", "b"], [0.1, 0.2, 0.7])


def test_alignment_table_prints_scores_per_layer_and_head():
    scores = pd.DataFrame({"layer": [0, 0, 0, 1, 1, 1], "head": [1, 0, "mean", 0, 1, -1],
                           "score": [0.25, 0.5, 0.125, 1.0, 0.0, 0.75]})
    chart = charts.alignment_table_chart(scores)
    data = _data(chart)
    assert set(zip(data["layer_label"], data["head_label"])) == {
        ("L1", "H1"), ("L1", "H2"), ("L1", "mean"), ("L2", "H1"), ("L2", "H2"), ("L2", "mean")}
    assert data["score_text"].tolist() == ["0.25", "0.50", "0.12", "1.00", "0.00", "0.75"]
    assert chart.to_dict()["layer"][0]["encoding"]["x"]["sort"] == ["H1", "H2", "mean"]
    with pytest.raises(ValueError, match="score"):
        charts.alignment_table_chart(pd.DataFrame({"layer": [0], "head": [0]}))


def test_topk_bars_highlight_the_chosen_token_and_show_percentages():
    fig = charts.topk_bars([("</s>", 0.6), ("<s>", 0.3), ("7", 0.1)], chosen="<s>")
    bar = fig.data[0]
    assert list(bar.x) == pytest.approx([60.0, 30.0, 10.0])
    assert list(bar.text) == ["60.0%", "30.0%", "10.0%"]
    colors = list(bar.marker.color)
    assert colors[1] == charts.CHOSEN_COLOR and colors[0] == colors[2] != charts.CHOSEN_COLOR
    assert list(fig.layout.yaxis.ticktext) == ["&lt;/s&gt;", "<b>&lt;s&gt;</b>", "7"]  # shown literally


def test_training_curves_keep_zoom_and_thin_long_histories():
    history = [{"step": i, "loss": 5.0 / i, "accuracy": 1 - 1.0 / i} for i in range(1, 10_001)]
    evals = [{"step": 5000, "loss": 0.1, "token_accuracy": 0.9, "exact_match": 0.5}]
    fig = charts.training_curves(history, evals, uirevision="run-7")
    assert fig.layout.uirevision == "run-7"
    by_name = {t.name: t for t in fig.data}
    assert {"train loss", "train accuracy", "valid loss", "valid exact match"} <= set(by_name)
    loss = by_name["train loss"]
    assert 100 < len(loss.x) <= 2000 and loss.x[-1] == 10_000 and loss.x[0] == 1
    assert list(by_name["valid exact match"].y) == [0.5]
    raw = charts.training_curves(history[:50], smoothing=0)
    assert list(raw.data[0].y) == [h["loss"] for h in history[:50]]
    assert charts.training_curves([]).layout.annotations[0].text == "No training steps yet"


def test_head_stats_on_hand_made_maps():
    eye = torch.eye(4).expand(1, 2, 4, 4).clone()
    uniform = torch.full((1, 2, 4, 4), 0.25)
    trace = AttentionTrace(("a", "b", "c", "</s>"), ("<s>", "x", "y", "z"), eye, torch.eye(4).expand(1, 2, 4, 4),
                           uniform)
    enc = charts.head_stats(trace, "encoder_self")
    assert list(enc.columns) == ["layer", "head", "entropy", "max_weight", "diag_distance"]
    assert enc["head"].tolist() == [0, 1, charts.MEAN_HEAD]
    assert enc["entropy"].tolist() == pytest.approx([0, 0, 0], abs=1e-6)
    assert enc["max_weight"].tolist() == pytest.approx([1, 1, 1])
    assert enc["diag_distance"].tolist() == pytest.approx([0, 0, 0])
    cross = charts.head_stats(trace, "cross")
    assert cross["entropy"].tolist() == pytest.approx([math.log(4)] * 3)
    assert cross["max_weight"].tolist() == pytest.approx([0.25] * 3)
    assert cross["diag_distance"][0] == pytest.approx((1.5 + 1.0 + 1.0 + 1.5) / 4)


def test_head_stats_scales_the_cross_diagonal_and_ignores_the_causal_mask():
    # 2 decoder rows attending to the first and last of 5 source tokens: the scaled diagonal exactly.
    cross = torch.tensor([[1.0, 0, 0, 0, 0], [0, 0, 0, 0, 1.0]]).expand(1, 1, 2, 5)
    dec = torch.tensor([[1.0, 0], [0.5, 0.5]]).expand(1, 1, 2, 2)
    trace = AttentionTrace(tuple("abcd") + ("</s>",), ("<s>", "d"), torch.full((1, 1, 5, 5), 0.2), dec, cross)
    assert charts.head_stats(trace, "cross")["diag_distance"][0] == pytest.approx(0.0)
    dec_stats = charts.head_stats(trace, "decoder_self")
    assert dec_stats["entropy"][0] == pytest.approx(math.log(2) / 2)  # row 0 has one allowed key: entropy 0
    assert dec_stats["max_weight"][0] == pytest.approx(0.75)


def test_timeline_frame_stacks_snapshots_with_their_own_labels(trace):
    later = _random_trace(["the", "cat", "sat", "</s>"], ["<s>", "die"], seed=1)
    frame = charts.timeline_frame([(100, trace), (200, later)], kind="cross", layer=1, head=None)
    assert frame["step"].value_counts().to_dict() == {100: 12, 200: 8}
    assert list(frame.columns) == ["step", "query_index", "query_token", "key_index", "key_token", "weight", "masked"]
    last = frame[frame.step == 200]["weight"].to_numpy()
    assert torch.allclose(torch.tensor(last), later.cross[1].mean(0).flatten(), atol=1e-6)
    assert charts.timeline_frame([]).empty


def test_export_gives_real_png_and_svg(trace):
    chart = charts.source_strip(["a", "b"], [0.2, 0.8])
    assert charts.chart_to_png(chart, scale=1.0)[:8] == b"\x89PNG\r\n\x1a\n"
    svg = charts.chart_to_svg(charts.attention_heatmap(trace, "cross", 0))
    assert svg.lstrip().startswith("<svg") and "katze" in svg
