"""Chart specs shared between sessions: the same inputs give the cached spec, any other number gives a new one."""
from __future__ import annotations

import dataclasses

import pytest

from tests.helpers.chart_traces import random_trace
from transformer.charts import attention_heatmap, source_strip
from ui.views import cached_chart, chart_spec

SRC, TGT = ["the", "cat", "sat", "</s>"], ["<s>", "die", "katze"]


def test_the_same_inputs_give_the_chart_built_from_them():
    trace = random_trace(SRC, TGT)
    first = cached_chart(attention_heatmap, trace, "cross", 1, 0, size=200)
    again = cached_chart(attention_heatmap, random_trace(SRC, TGT), "cross", 1, 0, size=200)  # equal, not the same
    assert first == again == chart_spec(attention_heatmap(trace, "cross", 1, 0, size=200))


def test_one_changed_weight_or_argument_is_never_served_from_the_cache():
    trace = random_trace(SRC, TGT)
    cached_chart(attention_heatmap, trace, "cross", 1, 0, size=200)
    cross = trace.cross.clone()
    cross[1, 0, 2, 1] += 0.25  # what other weights (a newer training step) would show
    changed = dataclasses.replace(trace, cross=cross)
    assert cached_chart(attention_heatmap, changed, "cross", 1, 0, size=200) == \
        chart_spec(attention_heatmap(changed, "cross", 1, 0, size=200))
    assert cached_chart(attention_heatmap, trace, "cross", 1, 1, size=200) == \
        chart_spec(attention_heatmap(trace, "cross", 1, 1, size=200))  # another head
    assert (cached_chart(source_strip, SRC, [0.1, 0.2, 0.3, 0.4])
            != cached_chart(source_strip, SRC, [0.1, 0.2, 0.3, 0.5]))


def test_a_caller_changing_its_spec_does_not_change_the_next_one():
    spec = cached_chart(source_strip, SRC, [0.1, 0.2, 0.3, 0.4])
    spec["datasets"].clear()
    assert cached_chart(source_strip, SRC, [0.1, 0.2, 0.3, 0.4])["datasets"]


def test_an_argument_it_cannot_read_raises_instead_of_being_cached_by_identity():
    with pytest.raises(TypeError, match="cannot fingerprint"):
        cached_chart(source_strip, SRC, object())


def test_the_cache_stays_within_its_row_budget(monkeypatch):
    import ui.views.kit.chart_cache as cache

    monkeypatch.setattr(cache, "MAX_ROWS", 30)
    for i in range(10):
        cached_chart(source_strip, SRC, [0.1, 0.2, 0.3, i / 10])
    assert sum(cache._rows.values()) <= 30 and set(cache._rows) == set(cache._specs)
