"""AppTest: the shipped recall model (checkpoints/recall) on the head page and the Learn page: the card beside them
names its recall head and the previous-token head it reads, and the recall head's page opens with its composition
partners."""
from __future__ import annotations

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_link
from tests.helpers.document_views import assert_zoom_shows, open_document

RECALL = ROOT / "checkpoints" / "recall"
pytestmark = pytest.mark.skipif(not (RECALL / "config.json").exists(), reason="checkpoints/recall not shipped")


def _card(at) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown)


@pytest.mark.parametrize("page, params", [("head", {"kind": "self", "layer": "2", "head": "1"}), ("learn", {})])
def test_the_card_names_the_recall_head_on_the_head_and_learn_pages(monkeypatch, studio_env, page, params):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    at = open_link(page, {"model": "shipped:recall", **params})
    assert_no_exception(at)
    assert "`self:L2H1` retrieval" in _card(at) and "`self:L1H1` previous-token" in _card(at)
    if page == "head":  # the recall head reads the previous-token head (its composition partners, from the weights)
        assert "**Earlier heads it reads**" in [m.value for m in at.markdown]


def test_a_long_stream_decodes_on_the_document_view_and_the_zoom_is_the_models(monkeypatch, studio_env):
    """An 8,000-symbol recall stream as a document on the Decode page: the store's decode (a local layer, a global
    one, queries log-n scaled past 512) runs in the background, draws within 1280 px, and the zoomed tile equals the
    model's own weights on the same tokens."""
    import random

    import torch

    from tests.helpers.app_session import charts, poll, texts
    from transformer.adapters import attention_store
    from transformer.data.recall import draw_recall
    from transformer.store import open_model
    from ui.server.shared_cache import shared_cache

    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    doc = draw_recall(random.Random(0), 8000, 8000).text
    shared_cache.clear()
    at = open_document("decode", "shipped:recall", doc)
    at.button(key="document_job_run").click().run()
    assert poll(at, lambda a: any("after" in t for t in texts(a.success)), seconds=300)
    assert_no_exception(at)
    drawn = charts(at)
    assert any(c["title"].startswith("Overview: L2 H1") or c["title"].startswith("Overview: L1 H1") for c in drawn)
    assert all(c["spec"].get("width", 0) <= 1280 for c in drawn)
    adapter = open_model(str(RECALL))
    decode = next(v for k, (v, _, _) in shared_cache()._items.items() if k[0] == "document-decode")
    prefix = adapter.decoder_prefix(adapter.tokenize_source(doc))
    full = torch.tensor([prefix + [s.token_id for s in decode.steps[:-1]]])
    eager = attention_store(adapter, full, full)
    assert_zoom_shows(at, eager, atol=1e-5, rtol=1e-4)  # the zoom drawn: the eager model's weights there
    shared_cache.clear()


def test_the_finder_runs_the_long_range_detectors_at_8k_and_finds_the_recall_head(monkeypatch, studio_env):
    """Find heads on the Attention page: the detectors' length picked (8,192 tokens), the button runs them there, and
    the finder's table gives the card's recall head the retrieval score 1 (the other head 0), its caption the length."""
    import json

    from tests.helpers.app_session import open_app, texts
    from ui.models import MODEL_KEY

    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    at = open_app()
    at.query_params.clear()
    at.selectbox(key=MODEL_KEY).set_value("shipped:recall").run()
    at.switch_page("pages/attention.py").run()
    examples = json.loads((RECALL / "config.json").read_text())["metrics"]["examples"]
    at.radio(key="attention_corpus_source").set_value("upload").run()
    lines = "\n".join(e["reference"] for e in examples)
    corpus = next(u for u in at.get("file_uploader") if u.proto.id.endswith("attention_corpus_file"))
    corpus.set_value(("corpus.txt", lines.encode(), "text/plain")).run()
    at.button(key="attention_corpus_run").click().run()
    assert_no_exception(at)
    at.number_input(key="attention_finder_long_range_length").set_value(8192).run()
    assert at.button(key="attention_finder_long_range").label == "Run the long-range detectors at 8,192 tokens"
    at.button(key="attention_finder_long_range").click().run()
    assert_no_exception(at)
    table = next(d.value for d in at.dataframe if "pattern" in d.value.columns and "label" in d.value.columns)
    scores = dict(zip(table["label"], table["retrieval"], strict=True))
    assert set(scores) == {"self:L1H1", "self:L2H1"} and scores["self:L2H1"] >= 0.9 and scores["self:L1H1"] == 0
    assert any("read 8,192-token inputs (copy rate" in t for t in texts(at.caption))
