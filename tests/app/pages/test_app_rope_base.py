"""The Train form's RoPE base: offered (enabled) only for rope positions on the decoder-only architecture, passed
into the run's model config, and a base the model config refuses shown in the config's own words, nothing started."""
from __future__ import annotations

from tests.helpers.app_session import assert_no_exception, open_app, texts
from ui.train import LIVE_RUN_KEY

SMALL = dict(train_d_model=16, train_n_heads=2, train_n_decoder_layers=1, train_d_ff=32, train_batch_size=16,
             train_n_train=200, train_max_steps=3, train_eval_every=3, train_eval_examples=5, train_probe_every=5,
             train_warmup_steps=0)
REFUSED = "rope_base must be between 2.0 and 1000000000000.0, got 1.5"  # ModelConfig's message


def _rope_form(base: float):
    at = open_app("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    assert at.number_input(key="train_rope_base").disabled  # encoder-decoder, sinusoidal: not offered
    at.selectbox(key="train_architecture").set_value("decoder-only").run()
    assert at.number_input(key="train_rope_base").disabled  # decoder-only, still sinusoidal
    at.selectbox(key="train_positions").set_value("rope").run()
    field = at.number_input(key="train_rope_base")
    assert not field.disabled and field.value == 10000.0 and "RoPE's base (default 10000)" in field.help
    for key, value in SMALL.items():
        at.number_input(key=key).set_value(value)
    return field.set_value(base).run()


def test_the_form_passes_the_rope_base_into_the_runs_config(studio_env):
    at = _rope_form(500_000.0)
    assert_no_exception(at)
    assert not texts(at.error)
    at.button(key="train_start").click().run()
    run = at.session_state[LIVE_RUN_KEY]
    try:
        assert_no_exception(at)
        cfg = run.plan.model_cfg
        assert (cfg.architecture, cfg.positions, cfg.rope_base) == ("decoder-only", "rope", 500_000.0)
    finally:
        run.job.stop()
        run.job.join(20)


def test_a_base_the_config_refuses_is_said_in_its_words_and_nothing_starts(studio_env):
    at = _rope_form(1.5)
    assert_no_exception(at)
    assert f"RoPE base: {REFUSED}." in texts(at.error)
    at.button(key="train_start").click().run()
    assert_no_exception(at)
    assert LIVE_RUN_KEY not in at.session_state
    assert any(e.startswith("Training did not start") and REFUSED in e for e in texts(at.error)), texts(at.error)
