"""AppTest: What made this score, composition and the route on the families added for long inputs, at Gemma 2
(soft-capped scores) and gpt-oss (attention sinks), tiny and random: the views open with no exception, the table's
sum is the model's score, and the page says in one line that Gemma 2's table explains the score before its cap, and
names gpt-oss's sink."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.pages.test_app_why_it_looks import ATTENTION_OPEN, DECODE_OPEN, open_page, sums
from tests.helpers.app_session import texts
from tests.helpers.hf_causal_models import WINDOW, build_new
from tests.helpers.real_shapes import point_app_at

TEXT = "a man in a blue shirt sees the dog and a woman in a red hat rides a bike"
SAYS = {"gemma2": "Soft-capped: the table explains the score before the cap", "gpt_oss": "sink logit"}


@pytest.fixture(scope="module")
def hf_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hf_why_new")
    for family in SAYS:
        build_new(family, root / family, window=WINDOW)
    return root


@pytest.mark.parametrize("family", list(SAYS))
def test_the_views_open_and_say_the_cap_or_the_sink(monkeypatch, tmp_path, hf_root, family):
    point_app_at(monkeypatch, tmp_path / "runs", hf_root)
    for page, opened in (("attention", ATTENTION_OPEN), ("decode", DECODE_OPEN)):
        at = open_page(f"hf:{family}", page, TEXT, opened)
        found = sums(at)
        assert found and all(abs(total - score) <= 1e-3 * max(1.0, abs(score)) for total, score in found)
        said = [t for t in texts(at.markdown) if SAYS[family] in t]
        assert len(said) == 1 and "\n" not in said[0], page
