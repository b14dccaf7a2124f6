"""The Train form's position scheme: RoPE trains a decoder-only model; for the other architectures it is refused
with the config's sentence before anything runs."""
from __future__ import annotations

from tests.helpers.app_session import assert_no_exception, open_app, texts
from ui.train import LIVE_RUN_KEY

SMALL = dict(train_d_model=16, train_n_heads=2, train_n_decoder_layers=1, train_d_ff=32, train_batch_size=16,
             train_n_train=200, train_max_steps=3, train_eval_every=3, train_eval_examples=5, train_probe_every=5,
             train_warmup_steps=0)


def _form(architecture: str):
    at = open_app("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    at.selectbox(key="train_architecture").set_value(architecture)
    at.selectbox(key="train_positions").set_value("rope")
    for key, value in SMALL.items():
        at.number_input(key=key).set_value(value)
    return at.button(key="train_start").click().run()


def test_the_form_trains_a_decoder_only_model_with_rope(studio_env):
    at = _form("decoder-only")
    run = at.session_state[LIVE_RUN_KEY]
    try:
        assert_no_exception(at)
        assert run.plan.model_cfg.positions == "rope"
    finally:
        run.job.stop()
        run.job.join(20)


def test_rope_is_refused_for_an_encoder_decoder(studio_env):
    at = _form("encoder-decoder")
    assert_no_exception(at)
    assert LIVE_RUN_KEY not in at.session_state
    assert any("decoder-only" in t for t in texts(at.error))
