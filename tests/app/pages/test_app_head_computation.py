"""AppTest: inside one head on the Attention and Decode pages — the contribution switch draws ||α·W_O v|| from the
model itself, the computation's softmax is the map's row, and a long vector or input stays within the page."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.app_session import assert_no_exception, chart_titled, only_frame, open_app, text_box, texts
from transformer.adapters import adapter_for
from transformer.analysis import capture_decode, key_vectors
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint

TEXT = "hello"


@pytest.fixture(scope="module")
def decoded(tiny_checkpoint_dir):
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    adapter = adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer)
    result = greedy_decode(adapter, TEXT)
    return adapter, result, capture_decode(adapter, result)


def _attention_page():
    at = open_app("attention")
    text_box(at, "attention_text").input(TEXT).run()
    at.selectbox(key="attention_layer").set_value(0).run()
    at.selectbox(key="attention_head").set_value(1).run()
    assert_no_exception(at)
    return at


def test_the_contribution_switch_draws_each_keys_contribution(studio_env, decoded):
    adapter, result, captured = decoded
    at = _attention_page()
    at.segmented_control(key="attention_show").set_value("contribution").run()
    assert_no_exception(at)
    chart = chart_titled(at, "Cross-attention · layer 1 · head 2 · contribution")
    frame = only_frame(chart)
    n_rows = result.trace.axis_sizes("cross")[0]
    last = frame[frame["query"].str.startswith(f"{n_rows}:")]["contribution"].tolist()  # labels count from 1
    expected = key_vectors(adapter, captured.insides, "cross", 0, 1, captured.query_of_row("cross", n_rows - 1))
    assert last == pytest.approx(expected.norm(dim=-1).tolist(), abs=1e-5)
    at.selectbox(key="attention_combine").set_value("max").run()  # max over heads: weights only, and said so
    assert any("weights only" in t for t in texts(at.info))


def test_the_computation_of_a_head_is_the_maps_row(studio_env, decoded):
    adapter, result, captured = decoded
    at = _attention_page()
    at.session_state["attention_inside_open"] = True  # the user opens "Inside this head"
    at.run()
    assert_no_exception(at)
    n_rows = result.trace.axis_sizes("cross")[0]
    weights = only_frame(chart_titled(at, "Softmax"))
    row = result.trace.matrix("cross", 0, 1)[n_rows - 1]
    assert weights["value"].tolist() == pytest.approx(row.tolist(), abs=1e-5)
    assert any("head 2" in t and "scale" in t for t in texts(at.markdown))
    at.selectbox(key="attention_inside_query").set_value(0).run()
    first = only_frame(chart_titled(at, "Softmax"))["value"].tolist()
    assert first == pytest.approx(result.trace.matrix("cross", 0, 1)[0].tolist(), abs=1e-5)


def test_decode_shows_the_steps_query(studio_env, decoded):
    adapter, result, captured = decoded
    at = open_app("decode")
    text_box(at, "decode_text").input(TEXT).run()
    at.session_state["decode_inside_open"] = True
    at.run()
    assert_no_exception(at)
    if at.selectbox(key="decode_head").value in (None, -1):  # the mean of heads has no one computation, and says so
        assert any("pick one head" in t for t in texts(at.info))
        at.selectbox(key="decode_head").set_value(0).run()
    assert_no_exception(at)
    assert any("query 1" in t for t in texts(at.markdown))  # step 1: the start token's row
    weights = only_frame(chart_titled(at, "Softmax"))["value"]
    assert float(torch.tensor(weights.tolist()).sum()) == pytest.approx(1.0, abs=1e-5)


def test_the_contribution_switch_is_in_the_link(studio_env):
    from streamlit.testing.v1 import AppTest

    from tests.helpers.app_session import APP
    at = _attention_page()
    at.segmented_control(key="attention_show").set_value("contribution").run()
    params = dict(at.query_params)
    assert params["show"] == "contribution"
    fresh = AppTest.from_file(str(APP), default_timeout=90)
    fresh.switch_page("pages/attention.py")
    fresh.query_params = params
    fresh.run()
    assert_no_exception(fresh)
    assert fresh.session_state["attention_show"] == "contribution"
    chart_titled(fresh, "Cross-attention · layer 1 · head 2 · contribution")
    bad = AppTest.from_file(str(APP), default_timeout=90)
    bad.switch_page("pages/attention.py")
    bad.query_params = {**params, "show": "nonsense"}
    bad.run()
    assert_no_exception(bad)
    assert bad.session_state["attention_show"] == "weight"


def test_the_line_view_draws_the_maps_weights(studio_env, decoded):
    adapter, result, captured = decoded
    at = _attention_page()
    at.session_state["attention_lines_open"] = True
    at.run()
    assert_no_exception(at)
    chart = chart_titled(at, "Cross-attention · layer 1 · line view")
    lines = max((f for f in chart["frames"].values() if "weight" in f), key=len)
    for row in lines.itertuples():
        head = int(row.head[1:]) - 1
        assert row.weight == pytest.approx(float(result.trace.matrix("cross", 0, head)[row.query_index,
                                                                                        row.key_index]), abs=1e-6)


def test_the_contribution_map_downloads_as_a_slide(studio_env, monkeypatch):
    from tests.helpers.app_session import capture_downloads
    downloads = capture_downloads(monkeypatch)
    at = _attention_page()
    at.segmented_control(key="attention_show").set_value("contribution").run()
    assert_no_exception(at)
    svg = downloads["cross_layer1_head2_contribution_slide.svg"]()
    assert svg.lstrip().startswith("<svg") and "contribution" in svg and f"Input: {TEXT}" in svg


def test_decode_shows_the_contribution_map_up_to_the_step_on_request(studio_env, decoded):
    adapter, result, captured = decoded
    at = open_app("decode")
    text_box(at, "decode_text").input(TEXT).run()
    at.toggle(key="decode_contribution").set_value(True).run()
    assert_no_exception(at)
    frame = only_frame(chart_titled(at, "Cross-attention · layer 2 · mean of heads · contribution"))
    assert set(frame["query"].str.split(":").str[0]) == {"1"}  # step 1: its row only (labels count from 1)
    mean = (sum(key_vectors(adapter, captured.insides, "cross", 1, h, 0) for h in range(2)) / 2).norm(dim=-1)
    assert frame["contribution"].tolist() == pytest.approx(mean.tolist(), abs=1e-5)
    at.selectbox(key="decode_head").set_value(0).run()
    assert_no_exception(at)
    chart_titled(at, "Cross-attention · layer 2 · head 1 · contribution")


def test_the_query_position_travels_in_the_link_and_one_the_input_has_not_got_is_said(studio_env, decoded):
    from tests.helpers.app_session import open_link
    adapter, result, captured = decoded
    at = _attention_page()
    at.session_state["attention_inside_open"] = True
    at.run()
    at.selectbox(key="attention_inside_query").set_value(0).run()
    assert_no_exception(at)
    params = {k: v[-1] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert params["query"] == "1"
    shared = open_link("attention", params)  # "Inside this head" opens on that query
    assert any("head 2 · query 1 (" in t for t in texts(shared.markdown))
    bad = open_link("attention", {**params, "query": "999"})
    n_rows = result.trace.axis_sizes("cross")[0]
    assert any(t.startswith("Query position 999 is not in this input") and f"1–{n_rows}" in t for t in texts(bad.info))
    assert any(f"head 2 · query {n_rows} (" in t for t in texts(bad.markdown))  # the last, as a fresh view shows


def test_inside_one_head_opens_at_bart_large_heads_and_its_longest_input(monkeypatch, tmp_path, real_shapes_root):
    """bart-large's 12 x 16 heads built from config, the input at the model's maximum length: the contribution map,
    the head computation and the line view open with no exception, each chart within a 1280 px page."""
    from tests.helpers.app_session import charts
    from transformer.store import open_model
    from ui.models import MODEL_KEY
    folder = real_shapes_root / "bart-large-heads"
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(real_shapes_root))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    adapter = open_model(str(folder))
    words = []
    while len(adapter.tokenize_source(" ".join(words)).ids) < adapter.max_source_len - 8:
        words.append(("the", "red", "bird", "eats", "a", "fish")[len(words) % 6])
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:bart-large-heads").run()
    at.switch_page("pages/attention.py").run()
    text_box(at, "attention_text").input(" ".join(words)).run()
    at.segmented_control(key="attention_show").set_value("contribution")
    at.session_state["attention_inside_open"] = True
    at.session_state["attention_lines_open"] = True
    at.selectbox(key="attention_head").set_value(15).run()
    assert_no_exception(at)
    titles = [c["title"] for c in charts(at)]
    assert any(t.endswith("head 16 · contribution") for t in titles) and "Softmax" in titles
    assert any("line view" in t for t in titles)
    for chart in charts(at):
        spec = chart["spec"]
        widths = [spec.get("width", 0), *(layer.get("width", 0) for layer in spec.get("layer", []))]
        assert max(w for w in widths if isinstance(w, (int, float))) <= 1280, chart["title"]
