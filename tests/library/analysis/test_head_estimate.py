"""A head's one-pass ablation estimate on its page is the head finder's point for that head (the same number, name
and definition), on shipped models of both decoding families; its standalone HTML carries it; where the finder has
none it says n/a and why."""
from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import ROOT
from transformer.analysis import (
    FINDER_COLUMNS,
    corpus_estimate,
    corpus_statistics,
    estimate_head_effects,
    head_estimate,
    head_finder_frame,
    output_ids,
)
from transformer.charts import head_page_html
from transformer.decode import greedy_decode
from transformer.model import Head
from transformer.store import open_model

SENTENCES = ["tkgnkuhmpxnhtqgx", "pvissbxfud", "xisxrmclpxzmwguoask"]


@pytest.mark.parametrize("name", ["reverse", "reverse-decoder-only"])
def test_the_head_pages_estimate_is_the_finders_point(name):
    adapter = open_model(str(ROOT / "checkpoints" / name))
    stats = corpus_statistics(adapter, SENTENCES)
    estimate = corpus_estimate(adapter, SENTENCES, n=2)
    finder = head_finder_frame(stats, estimate=estimate.frame).set_index("label")["estimate"]
    own = pd.concat([estimate_head_effects(adapter, s, output_ids(greedy_decode(adapter, s)))
                     for s in SENTENCES[:2]]).groupby("label")["estimate"].mean()  # the model's own, per sentence
    for kind, layer, h in zip(stats.frame["kind"], stats.frame["layer"], stats.frame["head"], strict=True):
        head = Head(kind, int(layer), int(h))
        found = head_estimate(stats, head, estimate, "unused")
        assert found.value == finder[head.label], head.label
        assert found.value == pytest.approx(float(own[head.label]), abs=1e-6)
        assert found.shown == f"{finder[head.label]:.3f}" and "first 2 sentences" in found.note
    head = Head(kind, int(layer), int(h))  # the last head: its page as HTML
    page = head_page_html(stats, head, estimate=head_estimate(stats, head, estimate, "unused"))
    assert f"estimate: {finder[head.label]:.3f}, the {FINDER_COLUMNS['estimate']}; mean over the corpus" in page


def test_n_a_and_why_where_the_finder_has_no_estimate():
    adapter = open_model(str(ROOT / "checkpoints" / "reverse"))
    stats = corpus_statistics(adapter, SENTENCES[:1])
    head = Head("cross", 0, 1)
    found = head_estimate(stats, head, None, "not estimated yet")
    assert (found.value, found.shown) == (None, "n/a")
    assert "estimate: n/a (not estimated yet)." in head_page_html(stats, head, estimate=found)
    assert "estimate" not in head_page_html(stats, head).split("<h2>")[0]  # no estimate asked: none said
