"""AppTest: the Attention page's "Find heads" (the head finder over the corpus statistics) and one head's page: a
click on a finder point opens that head's page, which draws the head's kept examples, tokens and layer; a link
names the head; the page opens with no exception and no chart wider than 1280 px on the shipped models."""
from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, charts, open_app, open_link, texts
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
    at = open_link("head", {"model": f"shipped:{name}"})
    at.number_input(key="head_corpus_cap").set_value(40)
    at.button(key="head_corpus_run").click().run()
    assert_no_exception(at)
    drawn = charts(at)
    assert len(drawn) >= 4
    for chart in drawn:
        assert max(_widths(chart["spec"]), default=0) <= 1280, chart["title"]
    at.button(key="head_page_html").click().run()
    assert_no_exception(at)
    page = at.get("download_button")[0]
    assert page is not None
