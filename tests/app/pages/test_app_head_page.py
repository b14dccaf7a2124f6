"""AppTest: the Attention page's "Find heads" (the head finder over the corpus statistics) and one head's page: a
click on a finder point opens that head's page, which draws the head's kept examples, tokens and layer; a link
names the head; "Run the long-range detectors" fills the finder's pattern column; the page opens with no exception and
no chart wider than 1280 px on every shipped model, and with the finder, and in presenter mode, at bart-large's and
GPT-2 small's head shapes."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, capture_downloads, charts, open_app, open_link, texts
from tests.helpers.real_shapes import PAGE_PX, point_app_at
from transformer.charts import FINDER_SELECTION
from transformer.model import Head
from ui.views import LINK_PARAMS

KEYS = LINK_PARAMS["head"]
SHIPPED = sorted(p.parent.name for p in (ROOT / "checkpoints").glob("*/config.json"))
REAL_SHAPES = {"bart-large-heads": (576, "cross:L12H16"), "gpt2-heads": (144, "self:L12H12")}  # heads, one in layer 12


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


def finder_table(at):
    """The finder's table (every head, its statistics, scores and pattern)."""
    return next(d.value for d in at.dataframe if "pattern" in d.value.columns and "label" in d.value.columns)


def run_long_range(at) -> None:
    """Click "Run the long-range detectors" and check it took: the button gone, every head's pattern filled."""
    assert (finder_table(at)["pattern"] == "").all()
    at.button(key="attention_finder_long_range").click().run()
    assert_no_exception(at)
    assert not [b for b in at.button if b.key == "attention_finder_long_range"]
    assert not any("run the long-range detectors" in t for t in texts(at.caption))
    table = finder_table(at)
    assert (table["pattern"] != "").all(), table[["label", "pattern"]]
    causal = table["kind"].isin(["self", "decoder_self"])
    assert causal.any() and table.loc[causal, "retrieval"].notna().all()
    assert table.loc[~causal, "retrieval"].isna().all()


def test_the_long_range_detectors_fill_the_finders_scores_on_a_model_of_few_positions(studio_env):
    """The tiny model reads 24 decoder positions, fewer than the detectors' shortest default input."""
    at = open_app()
    at.switch_page("pages/attention.py").run()
    at.button(key="attention_corpus_run").click().run()
    assert_no_exception(at)
    run_long_range(at)


def open_with_statistics(params: dict[str, str], cap: int) -> AppTest:
    """The head page opened by a link, with the statistics over the model's first `cap` validation sentences, or for
    a model without any (a decoder-only model trained on prompts of its own), over an uploaded file of its examples'
    references."""
    at = open_link("head", params)
    at.number_input(key="head_corpus_cap").set_value(cap)
    if "This model has no validation sentences: upload a file." in texts(at.info):
        name = params["model"].removeprefix("shipped:")
        examples = json.loads((ROOT / "checkpoints" / name / "config.json").read_text())["metrics"]["examples"]
        at.radio(key="head_corpus_source").set_value("upload").run()
        lines = "\n".join(e["reference"] for e in examples)
        at.get("file_uploader")[0].set_value(("corpus.txt", lines.encode(), "text/plain")).run()
        assert_no_exception(at)
    at.button(key="head_corpus_run").click().run()
    assert_no_exception(at)
    return at


@pytest.mark.parametrize("name", SHIPPED)
def test_the_head_page_opens_on_the_shipped_models_within_1280_px(monkeypatch, studio_env, name):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    downloads = capture_downloads(monkeypatch)
    at = open_with_statistics({"model": f"shipped:{name}"}, 40)
    assert "Strongest rows, by decile of the peak weight" in texts(at.subheader)
    assert len(charts(at)) >= 4
    assert_within_page(at)
    pages = [make for file_name, make in downloads.items() if file_name.endswith(".html")]  # made when clicked
    assert len(pages) == 1 and pages[0]().startswith("<!DOCTYPE html>")


@pytest.fixture
def shapes_env(monkeypatch, tmp_path, real_shapes_root) -> Path:
    """The app on bart-large's 576 heads and GPT-2 small's 144 (the session's real shapes)."""
    return point_app_at(monkeypatch, tmp_path / "runs", real_shapes_root)


def _step_width(chart: dict) -> float:
    """The width of a chart of facets sized by step (the strongest rows' strips): the step times its most x values
    in one facet; 0 for any other chart."""
    spec = chart["spec"]
    inner = spec.get("spec", {})
    if not isinstance(inner.get("width"), dict) or "facet" not in spec:
        return 0
    frame = next(iter(chart["frames"].values()))
    x, row = inner["encoding"]["x"]["field"], spec["facet"]["row"]["field"]
    return inner["width"]["step"] * frame.groupby(row)[x].nunique().max()


def assert_within_page(at: AppTest) -> None:
    """No chart wider than a 1280 px page, the strongest rows' strips (sized by their keys) included."""
    drawn = charts(at)
    assert any(_step_width(c) for c in drawn)  # the strips are there and measured
    for chart in drawn:
        assert max([*_widths(chart["spec"]), _step_width(chart)]) <= PAGE_PX, chart["title"]


@pytest.mark.parametrize("name", list(REAL_SHAPES))
def test_the_finder_and_a_head_page_at_real_shapes_within_1280_px(shapes_env, name):
    """The finder draws every head (with the long-range detectors' scores), a click opens a head of the last layer,
    and no chart of either is wider than 1280 px."""
    from ui.models import MODEL_KEY

    n_heads, label = REAL_SHAPES[name]
    at = open_app()
    at.query_params.clear()  # not the Home page's link (its model is the default one)
    at.selectbox(key=MODEL_KEY).set_value(f"hf:{name}").run()
    at.switch_page("pages/attention.py").run()
    at.number_input(key="attention_corpus_cap").set_value(40).run()
    at.button(key="attention_corpus_run").click().run()
    assert_no_exception(at)
    run_long_range(at)
    finder = next(c for c in charts(at) if re.fullmatch(r"\d+ heads", c["title"]))
    points = next(iter(finder["frames"].values()))
    assert len(points) == n_heads and points["label"].is_unique
    assert max(_widths(finder["spec"]), default=0) <= PAGE_PX
    at.query_params.clear()  # the page's own link, not the one AppTest kept from the first run
    at.session_state["attention_finder_chart"] = {"selection": {FINDER_SELECTION: [{"label": label}]}}
    at.run()
    assert_no_exception(at)
    assert any(f"{label} against layer 12" in c["title"] for c in charts(at))
    assert_within_page(at)


@pytest.mark.parametrize("name", list(REAL_SHAPES))
def test_the_head_page_opens_in_presenter_mode_at_real_shapes(shapes_env, name):
    """A link in presenter mode to a head of the last layer: the page opens, computes its statistics and draws the
    head within the page."""
    label = Head.parse(REAL_SHAPES[name][1])
    at = open_with_statistics({"model": f"hf:{name}", "present": "1", "kind": label.kind,
                               "layer": str(label.layer + 1), "head": str(label.head + 1)}, 30)
    assert [h for h in at.get("html") if "presenter mode" in str(h.proto.body)]
    assert "Strongest rows, by decile of the peak weight" in texts(at.subheader)
    assert "Composition partners" in texts(at.subheader)
    assert any(f"{label.label} against layer 12" in c["title"] for c in charts(at))
    assert_within_page(at)
