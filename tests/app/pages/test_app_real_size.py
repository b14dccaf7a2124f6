"""AppTest: the Attention page's views for real sizes: the head overview map (first for many heads; a click opens
the head), the switch that hides attention sinks (said beside the map, kept in the link and the trace download),
"Combine heads" (max, rollout) and the window of keys of a long input."""
from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import (
    assert_no_exception,
    capture_downloads,
    chart_titled,
    charts,
    open_app,
    open_link,
    text_box,
)
from tests.helpers.hf_tiny_models import build
from ui.models import MODEL_KEY

CAPTION = ("Two young children in blue shirts are playing soccer on a green field near the old church while their "
           "parents watch.")
MANY_HEADS = dict(d_model=40, layers=2, heads=20, ffn=64, positions=64)  # more heads per kind than a grid reads


@pytest.fixture
def shipped_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)


def _attention(text: str = CAPTION):
    at = open_app("attention")
    text_box(at, "attention_text").input(text).run()
    assert_no_exception(at)
    return at


def test_hiding_sinks_renormalises_says_so_and_travels_in_link_and_download(shipped_env, monkeypatch):
    downloads = capture_downloads(monkeypatch)
    at = _attention()
    assert json.loads(downloads["attention_trace.json"]()).get("hidden_keys") is None
    at.toggle(key="attention_hide_sinks").set_value(True).run()
    assert_no_exception(at)
    subtitle = str(chart_titled(at, "Cross-attention · layer")["spec"]["title"].get("subtitle"))
    assert "keys hidden:" in subtitle and "rows renormalised" in subtitle  # said right on the map
    saved = json.loads(downloads["attention_trace.json"]())
    assert saved["hidden_keys"]["source"]  # the first source token and </s> at least
    rows = saved["attention"]["cross"][0][0]
    assert all(abs(sum(r) - 1) < 1e-4 for r in rows)  # every row renormalised ...
    assert all(r[i] == 0 for r in rows for i in saved["hidden_keys"]["source"])  # ... without the hidden keys
    assert at.query_params["hide"] in ("1", ["1"])
    again = open_link("attention", {k: v[-1] if isinstance(v, list) else v for k, v in at.query_params.items()})
    assert again.session_state["attention_hide_sinks"] is True


def test_combining_heads_draws_max_and_rollout_and_the_link_keeps_it(shipped_env):
    at = _attention()
    at.selectbox(key="attention_combine").set_value("max").run()
    assert_no_exception(at)
    assert chart_titled(at, "Cross-attention · max over heads")
    at.selectbox(key="attention_combine").set_value("rollout").run()
    assert_no_exception(at)
    chart = chart_titled(at, "Cross-attention · attention rollout")
    frame = next(iter(chart["frames"].values()))
    assert abs(frame.groupby("query_index")["weight"].sum() - 1).max() < 1e-4  # rows of a rollout sum to 1
    assert at.query_params["combine"] in ("rollout", ["rollout"])


def test_a_long_input_shows_a_window_of_keys_that_fits_the_page(shipped_env):
    at = _attention(" ".join([CAPTION] * 5))  # ~100 words: more keys than the map's width holds at 8 px
    slider = [s for s in at.slider if str(s.key).startswith("attention_keys_cross_")]
    assert slider, "no key window for a long input"
    assert "keys 1–" in chart_titled(at, "Cross-attention · layer")["title"]
    first, last = slider[0].value
    slider[0].set_value((20, last + 19)).run()
    assert_no_exception(at)
    assert "keys 20–" in chart_titled(at, "Cross-attention · layer")["title"]


def test_many_heads_open_on_the_overview_and_a_click_opens_that_head(monkeypatch, tmp_path):
    downloads = capture_downloads(monkeypatch)
    build("bart", tmp_path / "hf" / "many-heads", size=MANY_HEADS)
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:many-heads").run()
    at.switch_page("pages/attention.py").run()
    text_box(at, "attention_text").input("the red bird eats the fish").run()
    assert_no_exception(at)
    titles = [c["title"] for c in charts(at)]
    overview = next(i for i, t in enumerate(titles) if "2 layers × 20 heads" in t)
    large = next(i for i, t in enumerate(titles) if t.startswith("Cross-attention · layer"))
    assert overview < large  # the overview comes first
    spec = charts(at)[overview]["spec"]
    assert any(p.get("name") == "cell" for p in spec.get("params", []))  # a click selects a head
    png = downloads["cross_head_overview_slide.png"]()  # the overview goes on a slide too
    assert png.startswith(b"\x89PNG") and int.from_bytes(png[16:20], "big") == 1920
    import ui.views.kit.real_size as real_size
    state = {"attention_overview": {"selection": {"cell": [{"layer": 0, "head": 7}]}}}  # what a click leaves
    with monkeypatch.context() as patch:
        patch.setattr(real_size.st, "session_state", state)
        real_size._open_overview_head()  # the chart's on_select callback
    at.session_state["attention_layer"], at.session_state["attention_head"] = state["attention_layer"], \
        state["attention_head"]
    at.run()
    assert chart_titled(at, "Cross-attention · layer 1 · head 8")


def _overview_and_large_map(at) -> tuple[int, int]:
    titles = [c["title"] for c in charts(at)]
    overview = next(i for i, t in enumerate(titles) if " layers × " in t and " heads · " in t)
    return overview, next(i for i, t in enumerate(titles) if t.startswith("Cross-attention · layer"))


def test_the_overview_leads_for_many_heads_of_a_kind_and_waits_below_for_a_few(monkeypatch, shipped_env,
                                                                              real_shapes_root):
    """bart-large's 12 layers x 16 heads (192 cross-attention heads) open on the overview; the shipped model's 2 x 4
    keep the large map first and the overview in its expander below."""
    at = _attention()
    overview, large = _overview_and_large_map(at)
    assert large < overview
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(real_shapes_root))
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:bart-large-heads").run()
    at.switch_page("pages/attention.py").run()
    text_box(at, "attention_text").input(CAPTION).run()
    assert_no_exception(at)
    overview, large = _overview_and_large_map(at)
    assert overview < large
    assert "12 layers × 16 heads" in charts(at)[overview]["title"]


def test_a_long_input_on_decode_draws_its_map_and_grid_through_a_window_of_keys(shipped_env):
    """Past the keys a column holds, Decode's rows map takes the page's width and shows a window of keys (moved with
    a slider, said in its heading), and the layer's grid shows the same window."""
    at = open_app("decode")
    text_box(at, "decode_text").input(" ".join([CAPTION] * 5)).run()
    assert_no_exception(at)
    slider = [s for s in at.slider if str(s.key).startswith("decode_keys_cross_")]
    assert slider, "no key window on Decode for a long input"
    first, last = slider[0].value
    n_keys = int(str(slider[0].key).rsplit("_", 1)[1])
    assert first == 1 and last < n_keys
    assert any(f"keys 1–{last} of {n_keys}" in m.value for m in at.markdown)
    keyed = [c for c in charts(at) if any("key_index" in f.columns for f in c["frames"].values())]
    assert keyed  # the rows map
    for chart in keyed:
        shown = set().union(*(set(f["key_index"]) for f in chart["frames"].values() if "key_index" in f.columns))
        assert shown and max(shown) < last, chart["title"]
    assert any(c["title"].endswith(f"heads and mean · keys 1–{last} of {n_keys}") for c in charts(at))  # the grid
    slider[0].set_value((30, last + 29)).run()
    assert_no_exception(at)
    assert any(f"keys 30–{last + 29} of {n_keys}" in m.value for m in at.markdown)
