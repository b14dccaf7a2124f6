"""Training charts (curves, attention timeline frame) and chart export to PNG / SVG."""
from __future__ import annotations

import torch

from tests.helpers.chart_traces import random_trace
from transformer.charts import (
    attention_heatmap,
    chart_to_png,
    chart_to_svg,
    source_strip,
    timeline_frame,
    training_curves,
)


def test_training_curves_keep_zoom_and_thin_long_histories():
    history = [{"step": i, "loss": 5.0 / i, "accuracy": 1 - 1.0 / i} for i in range(1, 10_001)]
    evals = [{"step": 5000, "loss": 0.1, "token_accuracy": 0.9, "exact_match": 0.5}]
    fig = training_curves(history, evals, uirevision="run-7")
    assert fig.layout.uirevision == "run-7"
    by_name = {t.name: t for t in fig.data}
    assert {"train loss", "train accuracy", "valid loss", "valid exact match"} <= set(by_name)
    loss = by_name["train loss"]
    assert 100 < len(loss.x) <= 2000 and loss.x[-1] == 10_000 and loss.x[0] == 1
    assert list(by_name["valid exact match"].y) == [0.5]
    raw = training_curves(history[:50], smoothing=0)
    assert list(raw.data[0].y) == [h["loss"] for h in history[:50]]
    assert training_curves([]).layout.annotations[0].text == "No training steps yet"


def test_timeline_frame_stacks_snapshots_with_their_own_labels():
    first = random_trace(["the", "cat", "sat", "</s>"], ["<s>", "die", "katze"])
    later = random_trace(["the", "cat", "sat", "</s>"], ["<s>", "die"], seed=1)
    frame = timeline_frame([(100, first), (200, later)], kind="cross", layer=1, head=None)
    assert frame["step"].value_counts().to_dict() == {100: 12, 200: 8}
    assert list(frame.columns) == ["step", "query_index", "query_token", "key_index", "key_token", "weight", "masked"]
    last = frame[frame.step == 200]["weight"].to_numpy()
    assert torch.allclose(torch.tensor(last), later.cross[1].mean(0).flatten(), atol=1e-6)
    assert timeline_frame([]).empty


def test_export_gives_real_png_and_svg():
    trace = random_trace(["the", "cat", "sat", "</s>"], ["<s>", "die", "katze"])
    assert chart_to_png(source_strip(["a", "b"], [0.2, 0.8]), scale=1.0)[:8] == b"\x89PNG\r\n\x1a\n"
    svg = chart_to_svg(attention_heatmap(trace, "cross", 0))
    assert svg.lstrip().startswith("<svg") and "katze" in svg
