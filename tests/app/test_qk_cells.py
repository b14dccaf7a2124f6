"""A map made clickable for "What made this score": the click's point selection is added to a copy of the spec (a
cached spec stays as it was), and a click reads back as (query, key)."""
from __future__ import annotations

from tests.helpers import ROOT
from transformer.charts import QK_CELL, attention_heatmap, clicked_cell
from transformer.decode import greedy_decode
from transformer.store import open_model
from ui.views.features.qk_table import clickable_cells
from ui.views.kit import chart_spec


def test_a_map_made_clickable_reads_its_clicked_cell_back():
    trace = greedy_decode(open_model(str(ROOT / "checkpoints" / "reverse")), "abcdef").trace
    spec = chart_spec(attention_heatmap(trace, "cross", 0, 1))
    before = repr(spec)
    made = clickable_cells(spec)
    assert repr(spec) == before  # the cached spec is left as it was
    assert any(p["name"] == QK_CELL for p in made["layer"][0]["params"])
    event = {"selection": {QK_CELL: [{"query_index": 2, "key_index": 4}]}}
    assert clicked_cell(event) == (2, 4)
    assert clicked_cell({"selection": {QK_CELL: []}}) is None and clicked_cell(None) is None
