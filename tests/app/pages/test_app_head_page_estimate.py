"""AppTest: a head's page shows its one-pass ablation estimate as the head finder has it (the finder's number for
that head, under the same name and definition, the same on the page's HTML), and n/a with the reason where the finder
has none (not estimated yet; an encoder-only model writes no output)."""
from __future__ import annotations

import html

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, capture_downloads, open_link, texts
from transformer.analysis import FINDER_COLUMNS, corpus_estimate
from transformer.charts import FINDER_SELECTION
from transformer.model import Head
from transformer.store import open_model


@pytest.fixture
def saved_files(monkeypatch):
    """file name -> what the page's lazy downloads save when clicked."""
    return capture_downloads(monkeypatch)


def _html(saved_files, label: str) -> str:
    """The head's page as its download button saves it (its text, entities read back)."""
    return html.unescape(saved_files[f"{Head.parse(label).format('_')}.html"]())


def _estimate_metric(at):
    return next(m for m in at.metric if m.label == "estimate")


def test_the_head_page_shows_the_finders_estimate_for_the_head(shipped_env, saved_files):
    at = open_link("attention", {"model": "shipped:reverse-decoder-only", "text": "abcdef"})
    at.number_input(key="attention_corpus_cap").set_value(6).run()
    at.button(key="attention_corpus_run").click().run()
    at.number_input(key="attention_finder_estimate_n").set_value(2).run()
    at.button(key="attention_finder_estimate_run").click().run()
    assert_no_exception(at)
    table = next(d.value for d in at.dataframe if "estimate" in d.value.columns and "label" in d.value.columns)
    shown = table.set_index("label")["estimate"]
    label = shown.abs().idxmax()  # the head the estimate says matters most: a number far from 0
    sources, refs = at.session_state["corpus_latest_sentences"][1:]
    model = corpus_estimate(open_model(str(ROOT / "checkpoints" / "reverse-decoder-only")), sources, refs, n=2)
    want = float(model.frame.set_index("label")["estimate"][label])
    assert abs(shown[label] - want) < 1e-4

    at.session_state["attention_finder_chart"] = {"selection": {FINDER_SELECTION: [{"label": label}]}}
    at.run()  # a click on the head's point: its page
    assert_no_exception(at)
    assert "One head over a corpus" in texts(at.title)
    metric = _estimate_metric(at)
    assert metric.value == f"{shown[label]:.3f}" == f"{want:.3f}"
    assert metric.proto.help == FINDER_COLUMNS["estimate"]
    assert any("as the head finder shows it: mean over the corpus's first 2 sentences" in t for t in texts(at.caption))
    page = _html(saved_files, label)
    assert f"estimate: {want:.3f}, the {FINDER_COLUMNS['estimate']}; mean over the corpus's first 2" in page


@pytest.mark.parametrize("name, why", [
    ("reverse", "not estimated yet: \"Estimate each head's effect over the first N sentences\" under Find heads"),
    ("toy-en-de-encoder-only", "an encoder-only model writes no output to estimate against")])
def test_n_a_and_why_where_the_finder_has_no_estimate(shipped_env, saved_files, name, why):
    at = open_link("head", {"model": f"shipped:{name}", "kind": "encoder_self", "layer": "1", "head": "1"})
    at.number_input(key="head_corpus_cap").set_value(10)
    at.button(key="head_corpus_run").click().run()
    assert_no_exception(at)
    assert _estimate_metric(at).value == "n/a"
    assert any(t.startswith("The one-pass ablation estimate is n/a: ") and why in t for t in texts(at.caption))
    page = _html(saved_files, "enc:L1H1")
    assert "estimate: n/a (" in page and why in page
