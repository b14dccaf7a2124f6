"""Any token draws on every chart that shows tokens: labels come from data or a parameter's value, never from a Vega
expression, so `if`, quotes, `</script>` or right-to-left text cannot blank a map."""
from __future__ import annotations

import html
import re

import pytest
import vl_convert

from tests.helpers.token_charts import DISTINCT_TOKENS, HOSTILE_TOKENS, token_charts
from tests.helpers.token_charts import expressions as spec_expressions
from transformer.charts import attention_heatmap, visible_token

CHARTS = token_charts()


@pytest.mark.parametrize("case", CHARTS, ids=[c.name for c in CHARTS])
def test_no_token_inside_an_expression(case):
    found = [e for e in spec_expressions(case.chart.to_dict()) if any(t in e for t in DISTINCT_TOKENS)]
    assert not found, f"{case.name}: tokens inside expressions: {found[:2]}"


@pytest.mark.parametrize("case", CHARTS, ids=[c.name for c in CHARTS])
def test_every_chart_draws_hostile_tokens(case):
    svg = vl_convert.vegalite_to_svg(case.chart.to_dict())  # Vega itself: an unknown signal raises here
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert [label for label in case.labels if label not in texts] == []
    assert re.search(r'class="mark-(rect|text|rule|line)[^"]*role-mark', svg)  # marks were drawn


def test_axis_labels_are_one_parameter_per_token_list():
    from tests.helpers.chart_traces import random_trace

    trace = random_trace(list(HOSTILE_TOKENS), ["<s>", "if"])
    spec = attention_heatmap(trace, "encoder_self", 0, 0).to_dict()
    params = [p for p in spec["params"] if "value" in p]
    assert [p["value"] for p in params] == [[visible_token(t) for t in HOSTILE_TOKENS]]  # both axes read the one list
    assert all(e == f"{params[0]['name']}[datum.value]" for e in spec_expressions(spec) if "[datum.value]" in e)
