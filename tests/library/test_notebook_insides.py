"""The notebook's inside one head: `inside` gives every stage with the model's numbers, `contributions` the map the
Attention page draws; a head the model has not got is a ValueError with one line."""
from __future__ import annotations

import pytest
import torch

from transformer import notebook

MODEL = "checkpoints/reverse"


def test_inside_is_the_maps_row():
    c = notebook.inside(MODEL, "abcdef", kind="cross", layer=0, head=1, query=2)
    trace = notebook.trace(MODEL, "abcdef")
    torch.testing.assert_close(c.weights, trace.matrix("cross", 0, 1)[2].float(), atol=1e-5, rtol=0)
    assert c.share.dim() == 1 and c.contributions.shape == c.weights.shape


def test_contributions_chart_is_drawn():
    chart = notebook.contributions(MODEL, "abcdef", kind="encoder_self", layer=0, head=None)
    spec = chart.to_dict()
    assert "contribution" in spec["title"]


@pytest.mark.parametrize("where, message", [({"head": 9}, "no head 9"), ({"kind": "self"}, "not an attention kind"),
                                            ({"query": 99}, "query 99 does not exist")])
def test_a_head_it_has_not_got_is_a_value_error(where, message):
    with pytest.raises(ValueError, match=message):
        notebook.inside(MODEL, "abcdef", **where)
