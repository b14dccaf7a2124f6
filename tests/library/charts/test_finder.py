"""The head finder and a head's page: the finder's points are the library's statistics, a head per point with its
`Head.label`, for every family (ours encoder-decoder, decoder-only and encoder-only; a Hugging Face model of each
family); the long-range scores sit on the causal heads only; a head's page draws its kept examples and its layer."""
from __future__ import annotations

import math

import pytest

from tests.helpers import ROOT
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_causal_models import lines
from tests.helpers.hf_masked_models import build as build_masked
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.hf_tiny_models import corpus
from transformer.analysis import corpus_statistics, head_finder_frame, long_range_heads
from transformer.charts import FINDER_SELECTION, head_finder_chart, head_page_charts, head_page_html, layer_frame
from transformer.model import Head
from transformer.store import open_model

MODELS = {"reverse": (lambda tmp: ROOT / "checkpoints" / "reverse", ["abcdefghij", "qwertyuiop", "zyxwvutsrq"]),
          "reverse-decoder-only": (lambda tmp: ROOT / "checkpoints" / "reverse-decoder-only",
                                   ["abcdefghij", "qwertyuiop"]),
          "toy-en-de-encoder-only": (lambda tmp: ROOT / "checkpoints" / "toy-en-de-encoder-only",
                                     ["the cat sees the dog", "a small dog runs"]),
          "bart": (lambda tmp: build_seq2seq("bart", tmp / "bart"), corpus(3)),
          "gpt2": (lambda tmp: build_causal("gpt2", tmp / "gpt2"), lines(3)),
          "bert": (lambda tmp: build_masked("bert", tmp / "bert"), lines(3))}


def _points(chart) -> list[dict]:
    spec = chart.to_dict()
    return next(iter(spec["datasets"].values()))


@pytest.fixture(scope="module", params=list(MODELS))
def finder(request, tmp_path_factory):
    build, texts = MODELS[request.param]
    adapter = open_model(str(build(tmp_path_factory.mktemp(request.param))))
    stats = corpus_statistics(adapter, texts)
    return adapter, stats, head_finder_frame(stats, long_range=long_range_heads(adapter, length=48))


@pytest.mark.parametrize("x, y, color", [("entropy", "max_weight", "kind"), ("first", "special", "distance"),
                                         ("previous", "next", "retrieval"), ("alignment", "max_weight", "pattern")])
def test_the_finders_points_are_the_librarys_statistics(finder, x, y, color):
    adapter, stats, frame = finder
    points = _points(head_finder_chart(frame, x, y, color))
    placed = frame.dropna(subset=[x, y])  # a head without an x or a y cannot be placed
    assert len(points) == len(placed) and (x not in ("previous", "next") or adapter.family.has_cross is False
                                           or len(placed) < len(frame))
    by_label = {p["label"]: p for p in points}
    library = stats.frame.set_index(["kind", "layer", "head"])
    for row in placed.itertuples():
        point = by_label[Head(row.kind, row.layer, row.head).label]
        for column in (x, y, color):
            want = library.loc[(row.kind, row.layer, row.head), column] if column in library else getattr(row, column)
            got = point[column]
            if isinstance(want, str):
                assert got == want
            elif math.isnan(want):
                assert got is None or math.isnan(got)
            else:
                assert got == pytest.approx(want, abs=1e-9)
    assert FINDER_SELECTION in str(head_finder_chart(frame, x, y, color).to_dict()["params"])


def test_every_head_of_every_kind_is_a_point_and_long_range_scores_only_on_causal_heads(finder):
    adapter, stats, frame = finder
    points = _points(head_finder_chart(frame, "entropy", "max_weight"))
    want = {Head(k, la, h).label for k, (n_layers, n_heads) in adapter.head_counts().items()
            for la in range(n_layers) for h in range(n_heads)}
    assert {p["label"] for p in points} == want
    causal = frame["kind"] == adapter.family.decoder_kind
    assert frame.loc[~causal, ["induction", "retrieval"]].isna().all().all()
    assert frame.loc[causal, ["induction", "retrieval"]].notna().all().all()
    assert (frame["pattern"] != "").all()


def test_a_heads_page_draws_its_examples_and_its_layer(finder):
    adapter, stats, _ = finder
    kind = adapter.family.kinds[-1]
    head = Head(kind, 0, 1)
    charts = head_page_charts(stats, head)
    assert charts["examples"] is not None and charts["layer"] is not None
    assert (charts["distance"] is None) == (adapter.family.axes[kind][0] != adapter.family.axes[kind][1])
    layer = layer_frame(stats, head)
    mine = layer[layer["this"]]
    row = stats.frame.query("kind == @kind and layer == 0 and head == 1").iloc[0]
    for r in mine.itertuples():
        assert r.value == pytest.approx(row[r.statistic])
    page = head_page_html(stats, head, model=adapter.name)
    assert page.startswith("<!DOCTYPE html>") and head.label in page and 'src="http' not in page
