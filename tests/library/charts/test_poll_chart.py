"""A poll's chart: the room's shares and the model's weights per token, the model's top token starred."""
from __future__ import annotations

import pytest

from transformer.charts import chart_to_svg, poll_chart, poll_frame


def test_the_frame_holds_the_rooms_shares_and_the_models_weights():
    frame = poll_frame(["▁Frau", "▁Mann", "."], [1, 3, 0], [0.2, 0.5, 0.3])
    votes = frame[frame["series"] == "the room's votes"]
    model = frame[frame["series"] == "the model"]
    assert votes["percent"].tolist() == [25.0, 75.0, 0.0]
    assert model["percent_text"].tolist() == ["20.0%", "50.0%", "30.0%"]
    assert model["option"].tolist()[1].endswith("★") and not model["option"].tolist()[0].endswith("★")
    assert model["option"].tolist()[0].startswith("1 · ")  # positions from 1, as the pages number them


def test_the_chart_draws_its_numbers_and_refuses_lengths_that_differ():
    svg = chart_to_svg(poll_chart(["a", "b"], [0, 0], [0.9, 0.1], title="Which key?"))
    assert "90.0%" in svg and "Which key?" in svg
    with pytest.raises(ValueError, match="2 options, 1 counts"):
        poll_chart(["a", "b"], [1], [0.5, 0.5])
