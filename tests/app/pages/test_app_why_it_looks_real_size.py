"""AppTest: what made a score, composition, the route and source or prefix at real shapes (random Hugging Face models
of opus-mt-en-de's shape, bart-large's heads and GPT-2 small's heads, built from their configs) with the 20-word
caption: every view opens with no exception, and no chart is wider than a 1280 px page."""
from __future__ import annotations

import pytest

from tests.app.pages.test_app_why_it_looks import ATTENTION_OPEN, DECODE_OPEN, open_page, sums
from tests.helpers.app_session import charts, texts
from tests.helpers.real_shapes import CAPTION, PAGE_PX, point_app_at


@pytest.fixture
def sizes_env(monkeypatch, tmp_path, real_shapes_root):
    return point_app_at(monkeypatch, tmp_path / "runs", real_shapes_root)


def too_wide(at) -> list[tuple[str, float]]:
    return [(c["title"], c["spec"]["width"]) for c in charts(at)
            if isinstance(c["spec"].get("width"), (int, float)) and c["spec"]["width"] > PAGE_PX]


@pytest.mark.parametrize("folder", ["opus-mt-shape", "bart-large-heads", "gpt2-heads"])
def test_the_views_open_at_real_shapes_within_the_page(sizes_env, folder):
    at = open_page(f"hf:{folder}", "attention", CAPTION, ATTENTION_OPEN)
    assert sums(at) and not too_wide(at)
    assert any("composition" in t.lower() for t in texts(at.markdown) + texts(at.caption))
    at = open_page(f"hf:{folder}", "decode", CAPTION, DECODE_OPEN)
    assert sums(at) and not too_wide(at)
    assert any("edges above" in t for t in texts(at.caption))
