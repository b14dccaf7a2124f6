"""AppTest: our shipped encoder-only model (`checkpoints/toy-en-de-encoder-only`, trained here on masked toy pairs)
on every page: Decode predicts at the masks of a pair with the model's own top-k; each page opens on it with no
exception and no error."""
from __future__ import annotations

import pytest
from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, charts, only_frame, open_app, texts

from transformer.decode import fill_masks
from transformer.store import open_model

SHIPPED = "shipped:toy-en-de-encoder-only"
PAGES = ("home", "decode", "attention", "compare", "train", "learn")
PAIR = ("the old man sees a small dog", "der alte mann sieht einen kleinen <mask>")


@pytest.fixture
def shipped_env(studio_env, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    return studio_env


def _open(page: str):
    at = open_app(timeout=240)
    at.query_params.clear()
    at.query_params["model"] = SHIPPED
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert_no_exception(at)
    assert not texts(at.error), texts(at.error)
    return at


MAPS = {"decode", "attention", "compare"}  # the pages that draw its maps on opening


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_the_shipped_encoder_only_model(shipped_env, page):
    at = _open(page)
    assert any("2 layers (encoder only)" in t for t in texts(at.markdown)), page  # the sidebar's card: our model
    if page in MAPS:
        assert any(c["title"].startswith("Encoder self-attention") for c in charts(at)), page


def test_decode_predicts_at_the_mask_of_a_pair_as_the_model_does(shipped_env):
    at = _open("decode")
    at.text_input(key="decode_text").input(PAIR[0]).run()
    at.text_input(key="decode_pair").input(PAIR[1]).run()
    assert_no_exception(at)
    expected = fill_masks(open_model(str(ROOT / "checkpoints" / "toy-en-de-encoder-only")), *PAIR, top_k=5)
    (bar,) = [c for c in charts(at) if c["title"].startswith("Mask at token")]
    frame = only_frame(bar).sort_values("rank")
    assert frame["token"].tolist() == [t for t, _, _ in expected.predictions[0].top_k]
    assert frame["token"].iloc[0] == "hund"  # the German word the English sentence holds
    assert frame["prob"].tolist() == pytest.approx([v for _, _, v in expected.predictions[0].top_k], abs=1e-6)
