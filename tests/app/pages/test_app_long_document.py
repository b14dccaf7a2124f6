"""A document in the Decode page's own box (a tiny Qwen2 with an 8,192-token context, a few thousand tokens): the
input's length decides what is kept, the box keeps its line breaks, a file that is not UTF-8 is one message, the
estimate comes before the confirming button, the decode runs as a background job with the store, the overview, zoomed
tile and row strip draw within 1280 px, the zoomed tile equals the eager weights, and a link by the document's hash
opens it again without carrying the text (an old link's text too)."""
from __future__ import annotations

import gzip

import pytest
import torch

from tests.helpers.app_session import assert_no_exception, charts, open_app, open_link, texts
from tests.helpers.document_views import assert_zoom_shows, decode_document, open_document, picked
from tests.helpers.hf_causal_models import SIZE, build, lines
from tests.helpers.real_shapes import point_app_at
from transformer.adapters import attention_store
from transformer.data import DataError, text_from_bytes
from transformer.store import open_model
from ui.models import MODEL_KEY
from ui.server import kept_text, text_hash
from ui.server.shared_cache import shared_cache
from ui.views import LINK_PARAMS

DOC = "\n".join(lines(70))  # about 2,800 tokens, line breaks kept
NAME = "qwen2-long"
BOX = LINK_PARAMS["decode"]["text"]  # the page's own input


@pytest.fixture
def app_root(monkeypatch, tmp_path):
    root = point_app_at(monkeypatch, tmp_path / "runs", tmp_path / "hf")
    build("qwen2", root / NAME, size={**SIZE, "positions": 8192})
    shared_cache.clear()
    yield root
    shared_cache.clear()


def _document_open(text: str = DOC):
    return open_document("decode", f"hf:{NAME}", text)


def test_a_document_decodes_in_the_background_and_its_zoom_is_exact(app_root):
    at = _document_open()
    assert at.text_area(key=BOX).value == DOC  # the line breaks kept
    estimate = " ".join(texts(at.caption))
    assert "tokens of the model's 8,192" in estimate and "Estimated: about" in estimate and " MB" in estimate
    decode_document(at)
    drawn = charts(at)
    titles = [c["title"] for c in drawn]
    layer, head, _ = picked(at)  # the page's own pickers
    assert any(t.startswith(f"Overview: L{layer + 1} H{head + 1}") for t in titles)
    assert any("exact weights" in t for t in titles)
    assert all(c["spec"].get("width", 0) <= 1280 for c in drawn)
    stats = at.dataframe[0].value
    assert len(stats) == 4 and stats["on the first token"].between(0, 1).all()  # the layer's heads, from the pass
    assert any("Not drawn at this length" in t and "attention rollout" in t for t in texts(at.caption))
    adapter = open_model(str(app_root / NAME))
    ids = torch.tensor([adapter.decoder_prefix(adapter.tokenize_source(DOC))])
    kept = shared_cache()._items  # the decode every session shares: the tokens it fed
    decode = next(v for k, (v, _, _) in kept.items() if k[0] == "document-decode")
    tokens = ids[0].tolist() + [s.token_id for s in decode.steps[:-1]]
    full = torch.tensor([tokens])
    eager = attention_store(adapter, full, full)
    assert_zoom_shows(at, eager, atol=1e-5, rtol=1e-4)  # the zoom drawn: the eager model's weights there
    assert any(t.startswith("Top keys of row") for t in texts(at.caption))
    assert kept_text(text_hash(DOC)) == DOC  # kept on the server under its hash for the link


def test_the_link_carries_the_hash_and_opens_the_document(app_root):
    at = decode_document(_document_open())
    digest = text_hash(DOC)
    link = at.query_params  # the page's link: the document's hash and the view, never its text
    assert link["doc"] == [digest] or link["doc"] == digest
    assert "text" not in link or DOC not in str(link["text"])
    other = open_link("decode", {k: (v[-1] if isinstance(v, list) else v) for k, v in link.items()})
    assert other.text_area(key=BOX).value == DOC  # the page's own box holds the document again
    assert any(t.startswith("Overview: L") for t in (c["title"] for c in charts(other)))  # shared: no job to wait
    assert "document_job_run" not in [b.key for b in other.button]  # kept for every session: nothing to start
    old = open_link("decode", {"model": f"hf:{NAME}", "text": "a short sentence", "doc": digest})  # an old link
    assert old.text_area(key=BOX).value == DOC  # (it named the one-line box's text too): the document wins
    attention = open_link("attention", {k: (v[-1] if isinstance(v, list) else v) for k, v in link.items()})
    drawn = charts(attention)
    assert any(c["title"].startswith("Overview: L") for c in drawn)
    assert all(c["spec"].get("width", 0) <= 1280 for c in drawn)
    gone = open_link("decode", {"model": f"hf:{NAME}", "doc": "0" * 32})
    assert any("not kept on this server" in t for t in texts(gone.info))


def test_a_document_past_the_models_context_is_refused_by_the_models_limit(app_root):
    at = _document_open("\n".join(lines(220)))  # past 8,192 tokens
    assert any("reads at most 8,192 tokens (its own context)" in t for t in texts(at.error))
    assert not [b for b in at.button if b.key == "document_job_run"]


def test_bytes_that_are_not_utf8_text_are_one_message():
    with pytest.raises(DataError, match=r"^notes.txt is not UTF-8 text \(byte 2 is 0xfc\)"):
        text_from_bytes("Grüße".encode("latin-1"), "notes.txt")
    assert text_from_bytes(gzip.compress("a\nb".encode()), "x.gz") == "a\nb"


def test_the_inputs_length_decides_what_is_kept(app_root):
    at = open_app()
    at.query_params.clear()
    at.selectbox(key=MODEL_KEY).set_value(f"hf:{NAME}").run()
    at.switch_page("pages/decode.py").run()
    at.text_area(key=BOX).input("the man sees the dog").run()  # short: the page's own decode, with maps
    assert_no_exception(at)
    assert not [b for b in at.button if b.key == "document_job_run"]
    assert not any(t.startswith("A document: ") for t in texts(at.caption))
    at.text_area(key=BOX).input(" ".join(lines(40))).run()  # about 1,500 tokens, one line: a document
    assert_no_exception(at)
    assert [b for b in at.button if b.key == "document_job_run"]
    assert any(t.startswith("A document: ") for t in texts(at.caption))
    upload = next(u for u in at.get("file_uploader") if u.proto.id.endswith("decode_text_file"))
    upload.set_value(("notes.txt.gz", gzip.compress(DOC.encode()), "application/gzip")).run()  # a text file
    assert_no_exception(at)
    assert at.text_area(key=BOX).value == DOC  # read into the page's own box, line breaks kept
    assert at.session_state["decode_text_upload"] is False  # its popover closed: the decode button is uncovered
    bad = next(u for u in at.get("file_uploader") if u.proto.id.endswith("decode_text_file"))
    bad.set_value(("notes.txt", "Grüße".encode("latin-1"), "text/plain")).run()
    assert any(t.startswith("notes.txt is not UTF-8 text") for t in texts(at.error))  # one message
    assert at.text_area(key=BOX).value == DOC  # the box keeps its text
