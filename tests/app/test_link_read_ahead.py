"""A link's decode starts when the browser asks for the link's page (ui.links.read_ahead): the page then shows the
decode it would have made itself, from the cache; only what a new session would decode is read ahead, one at a
time, with a bounded queue."""
from __future__ import annotations

import asyncio
import threading

import pytest

from tests.helpers import ROOT
from tests.helpers.hf_tiny_models import build
from ui.links import ReadAhead, ReadAheadLinks, link_decodes
from ui.links import read_ahead as read_ahead_module
from ui.models import shared_model
from ui.views.kit import inference

SHIPPED = "shipped:multi30k-en-de"


@pytest.fixture
def shipped(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)


def test_a_link_names_the_decodes_its_page_shows_first():
    text = "A dog runs on the beach."
    assert link_decodes("attention", {"model": [SHIPPED], "text": [text]}) == [(SHIPPED, text, 5)]
    assert link_decodes("decode", {"text": [text], "topk": ["9"]}) == [(None, text, 9)]  # None: the default model
    assert link_decodes("", {"text": [text], "topk": ["9"]}) == [(None, text, 5)]  # Home decodes with top-5
    assert link_decodes("compare", {"model": [SHIPPED], "compare": ["shipped:toy-en-de"], "text": [text]}) == [
        (SHIPPED, text, 5), ("shipped:toy-en-de", text, 5)]
    assert link_decodes("attention", {"model": [SHIPPED]}) == []  # no input named: the page's own default
    assert link_decodes("attention", {"text": [text], "mode": ["teacher"], "ref": ["Ein Hund."]}) == []
    assert link_decodes("train", {"text": [text]}) == []
    assert link_decodes("decode", {"text": ["x" * 20_000]}) == []  # a text no page accepts


def test_only_models_every_session_sees_are_read_ahead(shipped, tmp_path):
    assert shared_model(None).option.id == "shipped:multi30k-en-de"  # the default a new session opens
    assert shared_model("shipped:toy-en-de").option.id == "shipped:toy-en-de"
    for other in ("upload:abc", "live:xyz", "shipped:no-such-model", "hf:no-such-folder"):
        assert shared_model(other) is None
    build("marian", tmp_path / "hf" / "marian-tiny")
    hf = shared_model("hf:marian-tiny")
    assert hf.cache_key == "hf:marian-tiny::0"  # a new session's settings: no source prefix, no chat template


def test_the_page_shows_the_decode_read_ahead_without_decoding_again(shipped, monkeypatch):
    text = "Two dogs read ahead of the page in the park."
    (decode,) = link_decodes("attention", {"model": [SHIPPED], "text": [text]})
    assert ReadAhead().submit([decode]).result(timeout=60) == 1
    calls = []
    monkeypatch.setattr(inference, "greedy_decode", lambda *a, **k: calls.append(a))
    result = inference.greedy(shared_model(SHIPPED), text)  # what the page calls
    assert calls == [] and result.source_text == text and result.steps


def test_text_the_model_cannot_read_is_left_to_the_page(shipped):
    assert ReadAhead().submit([(SHIPPED, "   ", 5)]).result(timeout=60) == 0
    assert ReadAhead().submit([("upload:abc", "A dog.", 5)]).result(timeout=60) == 0


def test_at_most_a_few_links_wait_and_a_failure_is_only_skipped(monkeypatch, capsys):
    release = threading.Event()
    ran = []

    def slow(decodes):
        ran.append(decodes)
        release.wait(10)
        if decodes[0][1] == "boom":
            raise RuntimeError("no such thing")
        return len(decodes)

    monkeypatch.setattr(read_ahead_module, "read_ahead", slow)
    worker = ReadAhead(max_waiting=2)
    first, second = worker.submit([(None, "a", 5)]), worker.submit([(None, "boom", 5)])
    assert worker.submit([(None, "c", 5)]) is None  # two wait already: left to its page
    assert worker.submit([]) is None
    release.set()
    assert first.result(timeout=10) == 1 and second.result(timeout=10) == 0
    assert "read-ahead skipped: RuntimeError" in capsys.readouterr().err
    assert worker.submit([(None, "d", 5)]).result(timeout=10) == 1  # room again
    assert [d[0][1] for d in ran] == ["a", "boom", "d"]


def test_the_middleware_starts_a_links_decode_and_passes_every_request_on(monkeypatch):
    submitted, passed = [], []

    class Worker:
        def submit(self, decodes):
            submitted.append(decodes)

    async def app(scope, receive, send):
        passed.append(scope["path"])

    middleware = ReadAheadLinks(app, worker=Worker())

    def get(path: str, query: bytes, method: str = "GET") -> None:
        scope = {"type": "http", "method": method, "path": path, "query_string": query}
        asyncio.run(middleware(scope, None, None))

    get("/attention", b"model=shipped%3Amulti30k-en-de&text=Zwei%20M%C3%A4nner%20laufen.")
    get("/base/decode", b"text=A+dog.&topk=7")  # under a base path
    get("/static/js/index.js", b"text=x")  # not a page
    get("/attention", b"text=x", method="HEAD")
    get("/train", b"text=x")
    assert submitted == [[("shipped:multi30k-en-de", "Zwei Männer laufen.", 5)], [(None, "A dog.", 7)]]
    assert passed == ["/attention", "/base/decode", "/static/js/index.js", "/attention", "/train"]
