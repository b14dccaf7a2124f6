"""AppTest: Decode's logit lens (the step's table and the layers x steps grid), sampling and the beam tree, all open at
once, at the sizes users bring: the shipped Multi30k model and random Hugging Face models of opus-mt-en-de's shape,
bart-large's heads (12 + 12 layers x 16 heads, 1,024 positions) and GPT-2's (12 layers x 12 heads), with one word,
a 20-word caption and the longest input the model reads. No exception, every view drawn, and no chart wider than a
1280 px page (53 s for the module on a quiet 2-core machine)."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import ROOT
from tests.helpers.app_session import APP, assert_no_exception, charts, texts
from tests.helpers.real_shapes import CAPTION, PAGE_PX, point_app_at
from transformer.store import open_model

pytestmark = pytest.mark.slow

VIEWS = ("The chosen token's rank at every layer and step", "The beam tree", "Step 1 was drawn at temperature")


@pytest.fixture
def sizes_env(monkeypatch, tmp_path, real_shapes_root):
    return point_app_at(monkeypatch, tmp_path / "runs", real_shapes_root)


def longest(adapter, word: str) -> str:
    """The most `word`s whose source the model still reads (specials included)."""
    lo, hi = 1, adapter.max_source_len
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = len(adapter.tokenize_source(" ".join([word] * mid)).ids) <= adapter.max_source_len
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return " ".join([word] * lo)


def open_views(option: str, text: str) -> AppTest:
    """Decode with a sample (its settings in the link), the beam tree (its width in the link) and the lens open."""
    at = AppTest.from_file(str(APP), default_timeout=600)
    at.query_params.update({"model": option, "text": text, "temperature": "0.8", "sample_topk": "20", "top_p": "0.9",
                            "seed": "3", "beam": "4"})
    at.session_state["decode_lens_open"] = True
    at.switch_page("pages/decode.py")
    at.run()
    assert_no_exception(at)
    return at


def check_views(option: str, texts_by_length: dict[str, str]) -> None:
    for label, text in texts_by_length.items():
        at = open_views(option, text)
        titles = [c["title"] for c in charts(at)]
        missing = [v for v in VIEWS if not any(t.startswith(v) for t in titles)]
        assert not missing, f"{option}, {label}: {missing} not drawn; warnings: {texts(at.warning)}"
        wide = [(c["title"], c["spec"]["width"]) for c in charts(at)
                if isinstance(c["spec"].get("width"), (int, float)) and c["spec"]["width"] > PAGE_PX]
        assert not wide, f"{option}, {label}: wider than the page: {wide}"


def test_the_views_hold_on_the_shipped_model_at_every_length(sizes_env):
    adapter = open_model(str(ROOT / "checkpoints" / "multi30k-en-de"))
    check_views("shipped:multi30k-en-de", {"one word": "dog", "20 words": CAPTION, "longest": longest(adapter, "dog")})


@pytest.mark.parametrize("folder", ["opus-mt-shape", "bart-large-heads", "gpt2-heads"])
def test_the_views_hold_at_real_shapes_at_every_length(sizes_env, folder):
    adapter = open_model(str(sizes_env / folder))
    check_views(f"hf:{folder}", {"one word": "dog", "20 words": CAPTION, "longest": longest(adapter, "dog")})
