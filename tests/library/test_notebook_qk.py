"""The notebook's QK table (`transformer.notebook.qk`): one row per pair, summing with the terms to the model's score;
a head the model has not got is one ValueError."""
from __future__ import annotations

import pytest

from transformer.notebook import qk

MODEL = "checkpoints/reverse"


def test_the_table_sums_to_the_models_score():
    rows = qk(MODEL, "abcdef", "cross:L1H1", 1, 2)
    assert list(rows.columns) == ["query_part", "key_part", "contribution"]
    total = rows.contribution.sum() + sum(rows.attrs["terms"].values())
    assert total == pytest.approx(rows.attrs["score"], abs=1e-4)
    assert rows.attrs["key_token"] == "c"
    assert rows.contribution.abs().is_monotonic_decreasing


def test_a_head_that_is_not_there_is_one_value_error():
    with pytest.raises(ValueError, match="no head cross:L1H9"):
        qk(MODEL, "abcdef", "cross:L1H9", 1, 2)
