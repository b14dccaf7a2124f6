"""AppTest: the Learn tour opens on a query whose weights are spread (the highest entropy of layer 1, head 1, read
from the model's own decode), not the decoder's first query `<s>`, whose softmax over its one key is a single bar."""
from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_app, texts
from ui.models import shared_model
from ui.views.assembly.learn import spread_row
from ui.views.kit import inference


@pytest.fixture
def shipped(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)


def test_learn_opens_on_the_most_spread_query_of_the_default_model(shipped):
    at = open_app("learn")
    assert_no_exception(at)
    caption = next(t for t in texts(at.caption) if "the query of" in t)
    position = int(re.search(r"\(position (\d+)\)", caption).group(1))
    active = shared_model(None)
    result = inference.greedy(active, at.text_input(key="learn_text").value)
    kind = result.trace.family.output_kind
    weights = result.trace.maps[kind][0, 0]
    row = spread_row(result, kind)
    entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1)
    assert float(entropy[row]) == pytest.approx(float(entropy.max()))
    assert position > 1 and "‹<s>›" not in caption, caption
    assert float(weights[row].max()) < 0.9  # several bars, not one at 1.0
    assert float(weights[0].max()) == pytest.approx(1.0, abs=1e-4)  # what it opened on before: one bar
