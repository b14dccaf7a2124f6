"""AppTest: the Attention explorer shows every kind, layer and head on the tokens the model actually saw."""
from __future__ import annotations

import json

import pytest

from tests.helpers.app_session import assert_no_exception, chart_titled, only_frame, open_app, small_tables, texts
from transformer.adapters import adapter_for
from transformer.analysis import head_stats
from transformer.decode import KIND_TITLES, greedy_decode
from transformer.store import load_checkpoint

TEXT = "hello"


@pytest.fixture(scope="module")
def trace(tiny_checkpoint_dir):
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    return greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), TEXT).trace


def _attention_page():
    at = open_app("attention")
    at.text_input(key="attention_text").input(TEXT).run()
    assert_no_exception(at)
    return at


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_each_kind_shows_its_queries_down_and_keys_across(studio_env, trace, kind):
    at = _attention_page()
    at.radio(key="attention_kind").set_value(kind).run()
    n_layers = trace.n_layers(kind)
    assert len(at.selectbox(key="attention_layer").options) == n_layers
    chart = chart_titled(at, f"{KIND_TITLES[kind]} · layer {n_layers} · mean of {trace.n_heads} heads")
    frame = only_frame(chart)
    queries, keys = trace.labels(kind)
    assert len(frame) == len(queries) * len(keys)
    assert frame.sort_values(["query_index", "key_index"])["weight"].tolist() == pytest.approx(
        trace.matrix(kind, n_layers - 1).flatten().tolist(), abs=1e-6)
    encoding = chart["spec"]["layer"][0]["encoding"] if "layer" in chart["spec"] else chart["spec"]["encoding"]
    y_title, x_title = encoding["y"]["axis"]["title"], encoding["x"]["axis"]["title"]
    if kind == "cross":  # decoder tokens on the rows, source tokens on the columns
        assert "decoder" in y_title and "source" in x_title
    masked = frame[frame["masked"]]
    if kind == "decoder_self":
        assert len(masked) == len(queries) * (len(queries) - 1) // 2
        assert (masked["key_index"] > masked["query_index"]).all()
    else:
        assert masked.empty


def test_head_choice_and_colour_scale(studio_env, trace):
    at = _attention_page()
    at.selectbox(key="attention_layer").set_value(0).run()
    at.selectbox(key="attention_head").set_value(1).run()
    chart = chart_titled(at, "Cross-attention · layer 1 · head 2")
    frame = only_frame(chart).sort_values(["query_index", "key_index"])
    assert frame["weight"].tolist() == pytest.approx(trace.matrix("cross", 0, 1).flatten().tolist(), abs=1e-6)
    assert '"domain": [0.0, 1.0]' in json.dumps(chart["spec"])
    at.toggle(key="attention_fixed_scale").set_value(False).run()
    assert '"domain": [0.0, 1.0]' not in json.dumps(chart_titled(at, "Cross-attention · layer 1 · head 2")["spec"])


def test_model_view_and_statistics_cover_every_layer_and_head(studio_env, trace):
    at = _attention_page()
    frames = chart_titled(at, "Cross-attention · 2 layers × 2 heads and mean")["frames"].values()
    grid = next(frame for frame in frames if "url" in frame)  # one image per panel
    n_layers, n_heads = trace.n_layers("cross"), trace.n_heads
    assert len(grid) == n_layers * (n_heads + 1)
    assert sorted(set(zip(grid["layer"], grid["head"], strict=True))) == [(layer, head) for layer in range(n_layers)
                                                             for head in (-1, *range(n_heads))]
    [stats] = small_tables(at)  # the per-head statistics: a plain table, every layer × head and the mean
    assert stats["columns"] == ["layer · head", "entropy", "max weight", "diag. dist."]
    assert len(stats["help"]) == 3 and "nats" in stats["help"][0]
    assert [row[0] for row in stats["rows"]] == [f"L{layer + 1} {head}" for layer in range(n_layers)
                                                 for head in (*(f"H{h + 1}" for h in range(n_heads)), "mean")]
    expected = head_stats(trace, "cross")
    assert [float(row[1]) for row in stats["rows"]] == pytest.approx(expected["entropy"].tolist(), abs=6e-4)
    assert [float(row[3]) for row in stats["rows"]] == pytest.approx(expected["diag_distance"].tolist(), abs=6e-3)
    keys_present = {b.key for b in at.get("download_button")}
    assert {"attention_heatmap_download_png", "attention_heatmap_download_svg", "attention_trace_json",
            "attention_grid_download_png", "attention_grid_download_svg"} <= keys_present


def test_teacher_forced_mode_puts_the_reference_on_the_decoder_axis(studio_env):
    at = _attention_page()
    at.radio(key="attention_mode").set_value("teacher").run()
    reference = at.text_input(key="attention_reference").value
    assert reference == TEXT[::-1]
    at.radio(key="attention_kind").set_value("decoder_self").run()
    frame = only_frame(chart_titled(at, "Decoder self-attention"))
    rows = frame.drop_duplicates("query_index").sort_values("query_index")["query_token"].tolist()
    assert rows == ["<s>", *reference]
    at.text_input(key="attention_reference").input("").run()
    assert any("Type the reference output" in m for m in texts(at.info))
    assert_no_exception(at)
