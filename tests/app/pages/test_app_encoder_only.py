"""AppTest: our shipped encoder-only model (`checkpoints/toy-en-de-encoder-only`, trained here on masked toy pairs)
on every page: Decode predicts at the masks of a pair with the model's own top-k; each page opens on it with no
exception and no error."""
from __future__ import annotations

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, charts, only_frame, open_app, poll, texts
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


def test_the_train_page_trains_an_encoder_only_model_live(studio_env):
    """The Train page's Architecture picks encoder-only: the run reads the pair with one vocabulary, its validation is
    masked-token accuracy and its probe's recordings are the probe pair with masks, read by the one kind."""
    from ui.train import LIVE_RUN_KEY

    at = open_app("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    at.selectbox(key="train_architecture").set_value("encoder-only")
    for key, value in dict(train_d_model=16, train_n_heads=2, train_n_encoder_layers=1, train_d_ff=32,
                           train_batch_size=16, train_n_train=300, train_max_steps=6, train_eval_every=3,
                           train_eval_examples=10, train_probe_every=5).items():
        at.number_input(key=key).set_value(value)
    at.button(key="train_start").click().run()
    run = at.session_state[LIVE_RUN_KEY] if LIVE_RUN_KEY in at.session_state else None
    try:
        assert run is not None, texts(at.error)
        assert run.plan.model_cfg.architecture == "encoder-only"
        assert poll(at, lambda a: not run.job.snapshot().active, seconds=120)
        at.run()
        assert any(m.startswith("**Validation** (step 6") and "masked-token accuracy" in m for m in texts(at.markdown))
        frames = run.job.timeline()
        assert frames and all(t.kinds == ("encoder_self",) and "<mask>" in t.source_tokens for _, t in frames)
    finally:
        if run is not None:
            run.job.stop()
