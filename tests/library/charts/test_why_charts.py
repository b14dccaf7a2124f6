"""The why-it-looks-there charts built in the charts stage (What made this score's part map, source or prefix, a
step's route): what they draw is what the analysis found."""
from __future__ import annotations

import torch

from transformer.analysis import QKTable, Reliance, StepReliance
from transformer.charts import EDGE_KINDS, edge_kind, grouped_parts, qk_part_map, reliance_chart
from transformer.model import Head


def _step(step: int, source: float, detached: bool = False) -> StepReliance:
    return StepReliance(step, f"t{step}", source, 1 - source, (source,), 0.1, 0.0, detached)


def test_the_source_share_bars_outline_the_current_step_and_fit_the_width():
    found = Reliance("m", ("a", "b"), "x y z", (_step(1, 0.8), _step(2, 0.1, True), _step(3, 0.5)), (2,), 0.2)
    spec = reliance_chart(found, 2, 400).to_dict()
    bars, outline = spec["layer"]
    data = spec["datasets"]
    assert [row["source"] for row in data[bars["data"]["name"]]] == [0.8, 0.1, 0.5]
    assert [row["step"] for row in data[outline["data"]["name"]]] == [2]  # only the current step outlined
    assert 200 <= spec["width"] <= 400
    many = Reliance("m", ("a",), "", tuple(_step(i, 0.5) for i in range(1, 60)), (), 0.0)
    assert reliance_chart(many, 1, 400).to_dict()["width"] == 400  # 59 steps at 26 px: cut to the width given


def test_the_part_map_sums_one_heads_parts_into_its_sublayer():
    contributions = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    table = QKTable(Head("cross", 0, 0), 0, 0, ("embed", "cross:L1H1"), ("embed", "cross:L1H1", "cross:L1H2"),
                    contributions, {}, 21.0)
    frame = grouped_parts(table)
    cells = {(q, k): v for q, k, v in frame.itertuples(index=False)}
    assert cells == {("embed", "embed"): 1.0, ("embed", "cross:L1 heads"): 5.0,
                     ("cross:L1 heads", "embed"): 4.0, ("cross:L1 heads", "cross:L1 heads"): 11.0}
    assert float(frame["contribution"].sum()) == float(contributions.sum())
    assert qk_part_map(table, 600).to_dict()["mark"]["type"] == "rect"


def test_an_edge_is_named_by_what_it_goes_through():
    assert [edge_kind(v) for v in ("residual", "decoder:L2.mlp", "cross:L1H3", "decoder:L1H2")] == [
        EDGE_KINDS["residual"], EDGE_KINDS["mlp"], EDGE_KINDS["cross"], EDGE_KINDS["self"]]
