"""Starting a tiny training run from the Train page of an AppTest session (for the robustness tests)."""
from __future__ import annotations

from tests.helpers.app_session import assert_no_exception
from transformer.train import LiveRun
from ui.train import LIVE_RUN_KEY

TINY_FORM = dict(train_d_model=16, train_n_heads=2, train_n_encoder_layers=1, train_n_decoder_layers=1,
                 train_d_ff=32, train_batch_size=16, train_n_train=300, train_max_steps=3, train_eval_every=1000,
                 train_eval_examples=10, train_probe_every=5, train_max_seconds=60.0, train_warmup_steps=0)


def live_run_of(at) -> LiveRun | None:
    """The session's training run, if it started one."""
    return at.session_state[LIVE_RUN_KEY] if LIVE_RUN_KEY in at.session_state else None


def start_tiny_run(at, **form) -> LiveRun:
    """Fill the Train page's form with a tiny model (TINY_FORM, then `form`), press Train, return the run."""
    at.selectbox(key="train_preset").set_value("tiny").run()
    for key, value in {**TINY_FORM, **form}.items():
        at.number_input(key=key).set_value(value)
    at.button(key="train_start").click().run()
    assert_no_exception(at)
    run = live_run_of(at)
    assert run is not None, [e.value for e in at.error]
    return run
