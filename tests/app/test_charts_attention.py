"""Attention heatmaps and the layer x head grid: data, axes, tooltips, masks, step-through and token labels."""
from __future__ import annotations

import re

import pandas as pd
import pytest
import torch

from tests.helpers.chart_traces import ENGLISH, GERMAN, layer_data, random_trace
from transformer.adapters import adapter_for
from transformer.charts import (
    MASKED_COLOR,
    NOT_REACHED_COLOR,
    ChartTooLargeError,
    attention_grid,
    attention_heatmap,
    chart_to_svg,
    label_angle,
    selected_panel,
)
from transformer.data import TaskSpec, make_task
from transformer.decode import MEAN_HEAD, AttentionTrace, greedy_decode
from transformer.model import Seq2SeqTransformer, default_configs


@pytest.fixture(scope="module")
def model_trace() -> AttentionTrace:
    """Trace of greedy decoding "abca" with an untrained reversal model (real tokenizer, </s> appended)."""
    torch.manual_seed(0)
    task = make_task(TaskSpec(name="reverse", n_train=100, n_valid=10))
    model_cfg, _ = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size)
    model = Seq2SeqTransformer(model_cfg)
    return greedy_decode(adapter_for(model, task.src_tokenizer, task.tgt_tokenizer), "abca", max_steps=6).trace


@pytest.fixture
def trace() -> AttentionTrace:
    return random_trace(["the", "cat", "sat", "</s>"], ["<s>", "die", "katze"])


def chart_transforms(chart) -> list[dict]:
    """The heatmap layer's calculate transforms, wherever Altair put them (the layer or the chart)."""
    spec = chart.to_dict()
    found = [*spec.get("transform", []), *[t for layer in spec.get("layer", []) for t in layer.get("transform", [])]]
    return [t for t in found if "calculate" in t]


def _heat(chart) -> tuple[pd.DataFrame, dict]:
    """The heatmap layer's data and its encoding spec."""
    return layer_data(chart), chart.layer[0].to_dict()["encoding"]


def test_cross_heatmap_has_one_cell_per_query_key_pair_with_labelled_axes(trace):
    data, enc = _heat(attention_heatmap(trace, "cross", 1, 2))
    assert len(data) == 3 * 4  # T x S
    assert {"query_index", "query_token", "key_index", "key_token", "weight", "masked"} <= set(data.columns)
    assert enc["y"]["field"] == "query_index" and enc["x"]["field"] == "key_index"
    assert enc["y"]["axis"]["title"] == "query: decoder input (target)"
    assert enc["x"]["axis"]["title"] == "key: source token"
    assert {t["field"] for t in enc["tooltip"]} >= {"query_token", "key_token", "weight_text", "query_position",
                                                   "key_position"}
    # the tooltip counts positions from 1, as the panels and pickers do: computed from the 0-based indices
    calculated = {t["as"]: t["calculate"] for t in chart_transforms(attention_heatmap(trace, "cross", 1, 2))}
    assert calculated["query_position"] == "datum.query_index + 1"
    assert calculated["key_position"] == "datum.key_index + 1"
    row = data[(data.query_index == 2) & (data.key_index == 1)].iloc[0]
    assert (row.query_token, row.key_token) == ("katze", "cat")
    assert row.weight == pytest.approx(float(trace.cross[1, 2, 2, 1]))
    assert row.weight_text == f"{row.weight:.3f}"


def test_repeated_source_tokens_keep_separate_columns(model_trace):
    data, enc = _heat(attention_heatmap(model_trace, "cross", 0, 0))
    assert model_trace.source_tokens == ("a", "b", "c", "a", "</s>")
    assert sorted(data["key_index"].unique()) == [0, 1, 2, 3, 4]
    assert enc["x"]["scale"]["domain"] == [0, 1, 2, 3, 4]
    chart = attention_heatmap(model_trace, "cross", 0, 0).to_dict()
    labels = {p["name"]: p["value"] for p in chart["params"]}
    assert labels[enc["x"]["axis"]["labelExpr"].removesuffix("[datum.value]")] == ["a", "b", "c", "a", "</s>"]
    assert len(data) == len(model_trace.decoder_input_tokens) * 5


def test_decoder_self_attention_marks_the_future_as_masked_and_cross_does_not(trace):
    data, enc = _heat(attention_heatmap(trace, "decoder_self", 0, 0))
    assert data["masked"].tolist() == (data["key_index"] > data["query_index"]).tolist()
    assert data["masked"].any()
    assert set(data.loc[data["masked"], "weight_text"]) == {"masked"}
    assert enc["color"]["condition"] == {"test": "datum.masked", "value": MASKED_COLOR}
    cross, _ = _heat(attention_heatmap(trace, "cross", 0, 0))
    assert not cross["masked"].any()


def test_no_head_means_the_mean_over_heads_and_says_so(trace):
    chart = attention_heatmap(trace, "encoder_self", 1)
    data, _ = _heat(chart)
    expected = trace.encoder_self[1].mean(0).flatten()
    assert torch.allclose(torch.tensor(data["weight"].to_numpy()), expected, atol=1e-6)
    assert "mean of 3 heads" in chart.to_dict()["title"]["text"]


def test_colour_scale_is_fixed_to_0_1_unless_asked_to_fit_the_data(trace):
    _, fixed = _heat(attention_heatmap(trace, "cross", 0, 0))
    assert fixed["color"]["scale"]["domain"] == [0.0, 1.0]
    _, fitted = _heat(attention_heatmap(trace, "cross", 0, 0, fixed_scale=False))
    w = trace.cross[0, 0]
    assert fitted["color"]["scale"]["domain"] == pytest.approx([float(w.min()), float(w.max())])


def test_step_through_draws_rows_up_to_the_step_on_a_fixed_axis(trace):
    chart = attention_heatmap(trace, "cross", 0, 0, max_row=1, highlight_row=1, gold=[(0, 2), (1, 1), (2, 0)])
    data, enc = _heat(chart)
    assert sorted(data["query_index"].unique()) == [0, 1]
    assert enc["y"]["scale"]["domain"] == [0, 1, 2]  # the axis does not shrink
    gold = layer_data(chart, 1)
    assert list(zip(gold.query_index, gold.key_index, strict=True)) == [(0, 2), (1, 1)]  # row 2 is not drawn yet
    assert layer_data(chart, 2)["query_index"].tolist() == [1]
    with pytest.raises(IndexError):
        attention_heatmap(trace, "cross", 0, 0, highlight_row=3)


def test_rows_not_reached_yet_have_a_neutral_background(trace):
    assert attention_heatmap(trace, "cross", 0, 0, max_row=0).to_dict()["view"]["fill"] == NOT_REACHED_COLOR
    assert attention_grid(trace, "cross", max_row=0).to_dict()["spec"]["view"]["fill"] == NOT_REACHED_COLOR
    assert "fill" not in attention_heatmap(trace, "cross", 0, 0).to_dict()["view"]  # a full map needs none
    svg = chart_to_svg(attention_heatmap(trace, "cross", 0, 0, max_row=0))
    assert NOT_REACHED_COLOR in svg.lower()


def test_long_word_tokens_rotate_and_are_drawn_whole_while_characters_stay_level():
    words = random_trace(GERMAN, ENGLISH)
    _, enc = _heat(attention_heatmap(words, "cross", 0, size=360))
    assert enc["x"]["axis"]["labelAngle"] == -45
    level = random_trace(["sometimes", "an", "old", "wolf", "writes", "</s>"], ["<s>", "manchmal"])
    _, enc = _heat(attention_heatmap(level, "cross", 0, size=420))
    assert enc["x"]["axis"]["labelAngle"] == 0
    # every label centred on its column: Streamlit's chart theme would left-align the first ("sometimes" then ran
    # into "an") unless the axis says otherwise
    assert enc["x"]["axis"]["labelFlush"] is False and enc["y"]["axis"]["labelFlush"] is False
    svg = chart_to_svg(attention_heatmap(words, "cross", 0, size=360))
    drawn = set(re.findall(r">([^<>]+)</text>", svg))
    assert {"interessantes", "freunden", "manchmal", "gelesen"} <= drawn  # no label cut short with "…"
    assert not any("…" in text for text in drawn)
    one_long = ["ich", "esse", "manchmal", "am", "morgen", "einen", "roten", "apfel", "</s>"]
    assert label_angle(one_long, cell=360 / 14, font_size=11) == -45  # a single long word is enough
    letters = list("abcdefghijklmnopqrs") + ["</s>"]
    chars = random_trace(letters, ["<s>", *letters[:-1]])
    for size in (360, 520):
        _, enc = _heat(attention_heatmap(chars, "cross", 0, size=size))
        assert enc["x"]["axis"]["labelAngle"] == 0


def test_grid_shows_every_layer_and_head_plus_the_mean(trace):
    chart = attention_grid(trace, "decoder_self")
    data = chart.data
    assert len(data) == 2 * (3 + 1) * 3 * 3  # layers x (heads + mean) x T x T
    panels = set(zip(data["layer"], data["head"], strict=True))
    assert panels == {(layer, head) for layer in range(2) for head in (0, 1, 2, MEAN_HEAD)}
    spec = chart.to_dict()
    assert spec["facet"]["sort"] == ["L1 H1", "L1 H2", "L1 H3", "L1 mean", "L2 H1", "L2 H2", "L2 H3", "L2 mean"]
    assert spec["columns"] == 4
    (param,) = [p for p in spec["params"] if p["name"] == "cell"]
    assert param["select"]["type"] == "point" and param["select"]["fields"] == ["layer", "head"]
    mean = data[(data["layer"] == 1) & (data["head"] == MEAN_HEAD)]["weight"].to_numpy()
    assert torch.allclose(torch.tensor(mean), trace.decoder_self[1].mean(0).flatten(), atol=1e-6)
    assert "click a panel to select it" in spec["title"]["subtitle"]
    switching = attention_grid(trace, "decoder_self", clicks="switch").to_dict()["title"]["subtitle"]
    assert "switch it off" in switching and "select" not in switching  # says what a click does on that page
    with pytest.raises(ValueError, match="clicks"):
        attention_grid(trace, "decoder_self", clicks="drag")


def test_grid_layer_subset_step_limit_and_refusals(trace):
    data = attention_grid(trace, "cross", layers=[1], max_row=0).data
    assert set(data["layer"]) == {1} and set(data["query_index"]) == {0}
    assert len(data) == (3 + 1) * 1 * 4
    with pytest.raises(IndexError):
        attention_grid(trace, "cross", layers=[2])
    long_trace = random_trace([f"w{i}" for i in range(300)], ["<s>"] + [f"v{i}" for i in range(299)], heads=4)
    with pytest.raises(ChartTooLargeError, match="fewer layers"):
        attention_grid(long_trace, "encoder_self")


def test_selected_panel_reads_streamlit_selection_state():
    assert selected_panel({"selection": {"cell": [{"layer": 1, "head": 2}]}}) == (1, 2)
    assert selected_panel({"selection": {"cell": [{"layer": 0, "head": -1}]}}) == (0, None)
    assert selected_panel({"selection": {"cell": {}}}) is None  # nothing clicked yet
    assert selected_panel(None) is None


def test_streamlit_accepts_the_grid_as_a_selectable_chart():
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        import streamlit as st
        import torch as t

        from transformer.charts import attention_grid as grid
        from transformer.charts import selected_panel as selected
        from transformer.decode import AttentionTrace as Trace

        w = t.full((1, 2, 2, 2), 0.5)
        tr = Trace(("a", "</s>"), ("<s>", "a"), w, w, w)
        event = st.altair_chart(grid(tr, "cross", max_row=0), on_select="rerun", key="grid")
        st.write(selected(event))

    at = AppTest.from_function(page).run(timeout=30)
    assert not at.exception
    assert at.session_state["grid"]["selection"] == {"cell": {}}


def test_presenter_labels_grow_with_the_cells_and_still_fit_level():
    """Presenter mode's maps (large_labels) draw a short input's tokens larger than the page's usual 11 px; a label
    that would no longer fit level is drawn a size smaller rather than rotated; the usual map keeps 11 px."""
    short = random_trace(["ein", "hund", "</s>"], ["<s>", "a", "dog"])
    _, big = _heat(attention_heatmap(short, "cross", 0, size=420, large_labels=True))
    _, usual = _heat(attention_heatmap(short, "cross", 0, size=420))
    letters = list("abcdefghijklmnopqrstuvwxyz") + ["</s>"]
    _, small = _heat(attention_heatmap(random_trace(letters, ["<s>", *letters[:-1]]), "cross", 0, size=336,
                                       large_labels=True))
    assert big["x"]["axis"]["labelFontSize"] > usual["x"]["axis"]["labelFontSize"] == 11
    assert big["y"]["axis"]["labelFontSize"] == big["x"]["axis"]["labelFontSize"]
    assert small["x"]["axis"]["labelFontSize"] <= 11  # small cells: no larger than the usual map's
    level = random_trace(["sometimes", "an", "old", "wolf", "writes", "</s>"], ["<s>", "manchmal"])
    _, enc = _heat(attention_heatmap(level, "cross", 0, size=420, large_labels=True))
    assert enc["x"]["axis"]["labelAngle"] == 0 and enc["x"]["axis"]["labelFontSize"] >= 11
    long = random_trace(["sometimes", "wonderfully", "interesting", "</s>"], ["<s>", "manchmal"])
    _, enc = _heat(attention_heatmap(long, "cross", 0, size=420, large_labels=True))
    assert enc["x"]["axis"]["labelAngle"] != 0 and enc["x"]["axis"]["labelFontSize"] == 11  # rotated, never below 11
