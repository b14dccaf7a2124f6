"""The line view: its lines' weights are the map's, lines under the threshold are left out and said so, a long
input is a window of positions, and the chart stays narrower than a 1280 px page."""
from __future__ import annotations

import pytest

from transformer.charts import LINE_THRESHOLD, line_frame, line_view
from transformer.decode import greedy_decode
from transformer.store import open_model


@pytest.fixture(scope="module")
def trace():
    return greedy_decode(open_model("checkpoints/reverse"), "abcdefghij").trace


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_line_weights_are_the_maps(trace, kind):
    frame = line_frame(trace, kind, 0, [0, 1])
    for row in frame.itertuples():
        head = int(row.head[1:]) - 1
        assert row.weight == pytest.approx(float(trace.matrix(kind, 0, head)[row.query_index, row.key_index]),
                                           abs=1e-6)
    assert (frame["weight"] >= LINE_THRESHOLD).all()
    every = sum(int((trace.matrix(kind, 0, h) >= LINE_THRESHOLD).sum()) for h in (0, 1))
    assert len(frame) == every  # nothing above the threshold is left out


def test_a_window_keeps_its_positions_and_the_title_says_what_is_left_out(trace):
    frame = line_frame(trace, "encoder_self", 0, [0], window=(2, 5))
    assert frame["query_index"].between(2, 4).all() and frame["key_index"].between(2, 4).all()
    spec = line_view(trace, "cross", 0, [0, 1, 2, 3]).to_dict()
    assert "left out" in spec["title"]
    assert spec["width"] <= 1280 - 300  # room for the token columns on a 1280 px page
