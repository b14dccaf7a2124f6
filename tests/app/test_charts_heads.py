"""One number per layer and head: head statistics and the alignment-score table (head -1 = mean of heads)."""
from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from tests.helpers.chart_traces import layer_data
from transformer.analysis import head_stats
from transformer.charts import alignment_table_chart
from transformer.decode import MEAN_HEAD, AttentionTrace


def test_alignment_table_prints_scores_per_layer_and_head():
    scores = pd.DataFrame({"layer": [0, 0, 0, 1, 1, 1], "head": [1, 0, MEAN_HEAD, 0, 1, MEAN_HEAD],
                           "score": [0.25, 0.5, 0.125, 1.0, 0.0, 0.75]})
    chart = alignment_table_chart(scores)
    data = layer_data(chart)
    assert set(zip(data["layer_label"], data["head_label"], strict=True)) == {
        ("L1", "H1"), ("L1", "H2"), ("L1", "mean"), ("L2", "H1"), ("L2", "H2"), ("L2", "mean")}
    assert data["score_text"].tolist() == ["0.25", "0.50", "0.12", "1.00", "0.00", "0.75"]
    assert data["head"].dtype.kind == "i"
    assert chart.to_dict()["layer"][0]["encoding"]["x"]["sort"] == ["H1", "H2", "mean"]
    with pytest.raises(ValueError, match="score"):
        alignment_table_chart(pd.DataFrame({"layer": [0], "head": [0]}))
    with pytest.raises(ValueError, match="head -1 is the mean"):
        alignment_table_chart(pd.DataFrame({"layer": [0, 0], "head": [0, "mean"], "score": [0.5, 0.5]}))


def test_streamlit_shows_the_alignment_table_of_a_trace():
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        import streamlit as st
        import torch as t

        from transformer.analysis import alignment_scores
        from transformer.charts import alignment_table_chart as table
        from transformer.decode import AttentionTrace as Trace

        w = t.full((2, 2, 3, 3), 1 / 3)
        tr = Trace(("a", "b", "</s>"), ("<s>", "b", "a"), w, w, w)
        st.altair_chart(table(alignment_scores(tr, [1, 0])), key="table")

    at = AppTest.from_function(page).run(timeout=30)
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.get("vega_lite_chart")) == 1


def test_head_stats_on_hand_made_maps():
    eye = torch.eye(4).expand(1, 2, 4, 4).clone()
    uniform = torch.full((1, 2, 4, 4), 0.25)
    trace = AttentionTrace(("a", "b", "c", "</s>"), ("<s>", "x", "y", "z"), eye, torch.eye(4).expand(1, 2, 4, 4),
                           uniform)
    enc = head_stats(trace, "encoder_self")
    assert list(enc.columns) == ["layer", "head", "entropy", "max_weight", "diag_distance"]
    assert enc["head"].tolist() == [0, 1, MEAN_HEAD]
    assert enc["entropy"].tolist() == pytest.approx([0, 0, 0], abs=1e-6)
    assert enc["max_weight"].tolist() == pytest.approx([1, 1, 1])
    assert enc["diag_distance"].tolist() == pytest.approx([0, 0, 0])
    cross = head_stats(trace, "cross")
    assert cross["entropy"].tolist() == pytest.approx([math.log(4)] * 3)
    assert cross["max_weight"].tolist() == pytest.approx([0.25] * 3)
    assert cross["diag_distance"][0] == pytest.approx((1.5 + 1.0 + 1.0 + 1.5) / 4)


def test_head_stats_scales_the_cross_diagonal_and_ignores_the_causal_mask():
    # 2 decoder rows attending to the first and last of 5 source tokens: the scaled diagonal exactly.
    cross = torch.tensor([[1.0, 0, 0, 0, 0], [0, 0, 0, 0, 1.0]]).expand(1, 1, 2, 5)
    dec = torch.tensor([[1.0, 0], [0.5, 0.5]]).expand(1, 1, 2, 2)
    trace = AttentionTrace(tuple("abcd") + ("</s>",), ("<s>", "d"), torch.full((1, 1, 5, 5), 0.2), dec, cross)
    assert head_stats(trace, "cross")["diag_distance"][0] == pytest.approx(0.0)
    dec_stats = head_stats(trace, "decoder_self")
    assert dec_stats["entropy"][0] == pytest.approx(math.log(2) / 2)  # row 0 has one allowed key: entropy 0
    assert dec_stats["max_weight"][0] == pytest.approx(0.75)


def test_a_negative_correlation_is_drawn_apart_from_zero():
    """Spearman agreement runs from -1 to 1: red below 0, white at 0, blue above, so a head that ranks the tokens
    backwards does not look like a head with no relation at all."""
    from transformer.charts import agreement_chart

    frame = pd.DataFrame({"layer": [0, 0, 0], "head": [0, 1, MEAN_HEAD], "spearman": [-0.8, 0.0, 0.9],
                          "top1": [0.0, 0.5, 1.0]})
    cells = agreement_chart(frame, "spearman").to_dict()["layer"][0]["encoding"]["color"]["scale"]
    assert cells["domain"] == [-1.0, 1.0] and cells["domainMid"] == 0.0
    assert cells["range"][0] != cells["range"][-1] and cells["range"][len(cells["range"]) // 2] == "#f7f7f7"
    top1 = agreement_chart(frame, "top1").to_dict()["layer"][0]["encoding"]["color"]["scale"]
    assert top1["domain"] == [0.0, 1.0] and "domainMid" not in top1  # a share stays on the 0-1 blues
    text = agreement_chart(frame, "spearman").to_dict()["layer"][1]["encoding"]["color"]["condition"]["test"]
    assert text.startswith("abs(datum.score)")  # a dark red cell gets white text as a dark blue one does
