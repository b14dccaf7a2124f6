"""Byte-level BPE pieces (GPT-2, BART) are shown as the text they spell; the raw piece stays in trace and tooltip."""
from __future__ import annotations

import pytest

from tests.helpers.chart_traces import layer_data
from tests.helpers.hf_tiny_models import build
from transformer.adapters import HFSeq2Seq
from transformer.charts import attention_heatmap, visible_token
from transformer.charts.style import readable_piece
from transformer.decode import greedy_decode, merge_words


@pytest.mark.parametrize("piece, shown", [
    ("ĠwÃ¤hrend", "▁während"), ("Ġthe", "▁the"), ("ĠæĹ¥æľ¬", "▁日本"), ("Ċ", "⏎"), ("Ġ", "␣"), ("ĠĠ", "␣␣"),
    ("▁während", "▁während"), ("während", "während"), ("</s>", "</s>"), ("the", "the"), ("é", "é"),
    ("Ã", "Ã"),  # the first byte of a character cut in two: left as it is
])
def test_byte_level_pieces_read_as_text(piece, shown):
    assert visible_token(piece) == shown


def test_a_merged_byte_level_word_reads_whole():
    assert readable_piece("wÃ¤hrend") == "während"


@pytest.fixture(scope="module")
def bart(tmp_path_factory) -> HFSeq2Seq:
    return HFSeq2Seq.load(str(build("bart", tmp_path_factory.mktemp("bart"))))


def test_tiny_bart_trace_keeps_raw_pieces_and_charts_show_readable_ones(bart):
    result = greedy_decode(bart, "the red dog sees a big cat", max_steps=4)
    raw = result.trace.source_tokens
    assert any(t.startswith("Ġ") for t in raw)  # the trace (and its JSON) keeps the tokenizer's own pieces
    assert '"Ġ' in result.to_json() or "\\u0120" in result.to_json()
    chart = attention_heatmap(result.trace, "encoder_self", 0, 0)
    data = layer_data(chart)
    assert not data["key_token"].str.contains("Ġ").any()
    assert data["key_token"].str.startswith("▁").any()
    fields = {t["field"] for t in chart.to_dict()["layer"][0]["encoding"]["tooltip"]}
    assert {"key_piece", "query_piece"} <= fields
    row = data[data["key_piece"].str.startswith("Ġ")].iloc[0]
    assert row["key_token"] == "▁" + row["key_piece"][1:]
    words = merge_words(result.trace)
    assert not any("Ġ" in visible_token(w) for w in words.source_tokens)
