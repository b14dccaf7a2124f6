"""AppTest: the Attention page's "Find heads" (the head finder over the corpus statistics) and one head's page: a
click on a finder point opens that head's page, which draws the head's kept examples, tokens and layer; a link
names the head; the page opens with no exception and no chart wider than 1280 px on the shipped models."""
from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, capture_downloads, charts, open_app, open_link, texts
from transformer.charts import FINDER_SELECTION
from ui.views import LINK_PARAMS

KEYS = LINK_PARAMS["head"]


def _widths(spec: dict) -> list[float]:
    """Every width a spec states, its sub-charts' included."""
    out = [spec["width"]] if isinstance(spec.get("width"), (int, float)) else []
    for part in ("layer", "vconcat", "hconcat", "concat"):
        for sub in spec.get(part, []):
            out += _widths(sub)
    if isinstance(spec.get("spec"), dict):
        out += _widths(spec["spec"])
    return out


def test_a_click_on_a_finder_point_opens_that_heads_page(studio_env):
    at = open_app()
    at.switch_page("pages/attention.py").run()
    at.button(key="attention_corpus_run").click().run()
    assert_no_exception(at)
    finder = next(c for c in charts(at) if re.fullmatch(r"\d+ heads", c["title"]))
    labels = set(next(iter(finder["frames"].values()))["label"])
    assert "cross:L1H2" in labels and any(p.get("name") == FINDER_SELECTION for p in finder["spec"]["params"])
    at.session_state["attention_finder_chart"] = {"selection": {FINDER_SELECTION: [{"label": "cross:L1H2"}]}}
    at.run()  # what a click leaves: the page switches to the head's
    assert_no_exception(at)
    assert "One head over a corpus" in texts(at.title)
    assert (at.session_state[KEYS["kind"]], at.session_state[KEYS["layer"]], at.session_state[KEYS["head"]]) == \
        ("cross", 0, 1)
    titles = [c["title"] for c in charts(at)]
    assert "Attended to most (as key)" in titles and any("against layer 1" in t for t in titles)


def test_a_link_opens_a_heads_page_that_offers_the_statistics(studio_env):
    at = open_link("head", {"model": "shipped:reverse", "kind": "decoder_self", "layer": "2", "head": "2"})
    assert (at.session_state[KEYS["kind"]], at.session_state[KEYS["layer"]], at.session_state[KEYS["head"]]) == \
        ("decoder_self", 1, 1)
    at.button(key="head_corpus_run").click().run()
    assert_no_exception(at)
    titles = [c["title"] for c in charts(at)]
    assert any("dec:L2H2 against layer 2" in t for t in titles) and any("distance" in t for t in titles)


@pytest.mark.parametrize("name", ["reverse", "reverse-decoder-only", "toy-en-de-encoder-only", "multi30k-en-de"])
def test_the_head_page_opens_on_the_shipped_models_within_1280_px(monkeypatch, studio_env, name):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    downloads = capture_downloads(monkeypatch)
    at = open_link("head", {"model": f"shipped:{name}"})
    at.number_input(key="head_corpus_cap").set_value(40)
    at.button(key="head_corpus_run").click().run()
    assert_no_exception(at)
    drawn = charts(at)
    assert len(drawn) >= 4
    for chart in drawn:
        assert max(_widths(chart["spec"]), default=0) <= 1280, chart["title"]
    pages = [make for file_name, make in downloads.items() if file_name.endswith(".html")]  # made when clicked
    assert len(pages) == 1 and pages[0]().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("name, family", [("bart-large-heads", "bart"), ("gpt2-heads", "gpt2")])
def test_the_finder_and_a_head_page_at_real_shapes_within_1280_px(monkeypatch, tmp_path, name, family):
    """bart-large's 576 heads and GPT-2 small's 144, built from config: the finder draws every head, a click opens a
    head of the last layer, and no chart of either is wider than 1280 px."""
    from tests.helpers.hf_causal_models import build as build_causal
    from tests.helpers.hf_tiny_models import BART_LARGE_HEADS, build
    from tests.helpers.real_shapes import GPT2_HEADS, PAGE_PX, point_app_at
    from ui.models import MODEL_KEY

    root = point_app_at(monkeypatch, tmp_path / "runs", tmp_path / "hf")
    (build(family, root / name, size=BART_LARGE_HEADS) if family == "bart"
     else build_causal(family, root / name, size=GPT2_HEADS))
    at = open_app()
    at.query_params.clear()  # not the Home page's link (its model is the default one)
    at.selectbox(key=MODEL_KEY).set_value(f"hf:{name}").run()
    at.switch_page("pages/attention.py").run()
    at.button(key="attention_corpus_run").click().run()
    at.button(key="attention_finder_long_range").click().run()
    assert_no_exception(at)
    finder = next(c for c in charts(at) if re.fullmatch(r"\d+ heads", c["title"]))
    points = next(iter(finder["frames"].values()))
    assert len(points) == (576 if family == "bart" else 144) and points["label"].is_unique
    assert max(_widths(finder["spec"]), default=0) <= PAGE_PX
    label = "cross:L12H16" if family == "bart" else "self:L12H12"
    at.query_params.clear()  # the page's own link, not the one AppTest kept from the first run
    at.session_state["attention_finder_chart"] = {"selection": {FINDER_SELECTION: [{"label": label}]}}
    at.run()
    assert_no_exception(at)
    drawn = charts(at)
    assert any(f"{label} against layer 12" in c["title"] for c in drawn)
    for chart in drawn:
        assert max(_widths(chart["spec"]), default=0) <= PAGE_PX, chart["title"]
