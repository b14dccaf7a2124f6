"""A stored decode's trace never makes its n x n maps unless a view reads them: decoding, asking which kinds it has
and writing it with the store in a side file all work from the store alone."""
from __future__ import annotations

import json

import pytest

from tests.helpers.hf_causal_models import build, lines
from transformer.decode import greedy_decode, load_trace_json, save_trace_json
from transformer.model import AttentionStore
from transformer.store import open_model


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    return open_model(str(build("qwen2", tmp_path_factory.mktemp("lazy") / "qwen2")))


def test_decoding_and_writing_a_stored_trace_never_makes_its_maps(adapter, tmp_path, monkeypatch):
    def refuse(self, kind):
        raise AssertionError("the dense maps were made")

    monkeypatch.setattr(AttentionStore, "dense", refuse)
    text = " ".join(lines(6))
    prompt = adapter.decoder_prefix(adapter.tokenize_source(text))
    result = greedy_decode(adapter, text, max_steps=3, keep="store")
    trace = result.trace
    assert "self" in trace.maps and "cross" not in trace.maps and list(trace.maps) == ["self"]
    assert trace.shape("self")[2:] == (len(prompt) + 2, len(prompt) + 2)
    side = save_trace_json(result, tmp_path / "t.json", side_above=0)
    assert side is not None and json.loads((tmp_path / "t.json").read_text())["store"] == {"file": side.name}
    back = load_trace_json(tmp_path / "t.json")
    row = back.trace.store.tile("self", 0, 0, [len(prompt) - 1])
    assert row.shape == (1, len(prompt) + 2) and float(row.sum()) == pytest.approx(1.0, abs=1e-5)
