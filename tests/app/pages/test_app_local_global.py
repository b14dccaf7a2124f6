"""Local and global layers and log-n scaling in the app: the Train form offers the window and the global layers for
rope on the decoder-only architecture and log-n scaling for the decoder-only architecture, passes them into the
run's model config, and says a combination the config refuses in its own words (nothing started); a model with them
has its local and global layers named on the Learn page's positions stage and in the sidebar's card, and a model
without them reads as before."""
from __future__ import annotations

from tests.helpers.app_session import assert_no_exception, chart_titled, open_app, open_link, texts
from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.store import save_checkpoint
from transformer.train import Trainer, checkpoint_from_trainer
from ui.train import LIVE_RUN_KEY

SMALL = dict(train_d_model=16, train_n_heads=2, train_n_decoder_layers=2, train_d_ff=32, train_batch_size=16,
             train_n_train=200, train_max_steps=3, train_eval_every=3, train_eval_examples=5, train_probe_every=5,
             train_warmup_steps=0)
REFUSED = "global_every needs a window: without one every layer is global already"  # ModelConfig's message
LAYER_KEYS = ("train_window", "train_global_every", "train_logn_length")


def _form(window: int, global_every: int, logn_length: int):
    at = open_app("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    assert all(at.number_input(key=key).disabled for key in LAYER_KEYS)  # encoder-decoder: none offered
    at.selectbox(key="train_architecture").set_value("decoder-only").run()
    assert [at.number_input(key=key).disabled for key in LAYER_KEYS] == [True, True, False]  # sinusoidal: log-n
    at.selectbox(key="train_positions").set_value("rope").run()
    fields = [at.number_input(key=key) for key in LAYER_KEYS]
    assert not any(f.disabled for f in fields) and [f.value for f in fields] == [0, 0, 0]
    assert "sliding window" in fields[0].help and "NoPE" in fields[1].help and "ln n / ln N" in fields[2].help
    for key, value in SMALL.items():
        at.number_input(key=key).set_value(value)
    for field, value in zip(fields, (window, global_every, logn_length), strict=True):
        field.set_value(value)
    return at.run()


def test_the_form_passes_local_global_layers_and_log_n_scaling_into_the_runs_config(studio_env):
    at = _form(16, 2, 512)
    assert_no_exception(at)
    assert not texts(at.error)
    at.button(key="train_start").click().run()
    run = at.session_state[LIVE_RUN_KEY]
    try:
        assert_no_exception(at)
        cfg = run.plan.model_cfg
        assert (cfg.architecture, cfg.positions, cfg.window, cfg.global_every, cfg.logn_length) == (
            "decoder-only", "rope", 16, 2, 512)
        assert [cfg.is_local(i) for i in range(cfg.n_decoder_layers)] == [True, False]
    finally:
        run.job.stop()
        run.job.join(20)


def test_a_combination_the_config_refuses_is_said_in_its_words_and_nothing_starts(studio_env):
    at = _form(0, 2, 0)  # global layers without a window
    assert_no_exception(at)
    assert f"{REFUSED}." in texts(at.error)
    at.button(key="train_start").click().run()
    assert_no_exception(at)
    assert LIVE_RUN_KEY not in at.session_state
    assert any(e.startswith("Training did not start") and REFUSED in e for e in texts(at.error)), texts(at.error)


def _save(folder, name: str, **layers) -> None:
    """A decoder-only RoPE model trained one step on reversal, saved as a shipped checkpoint."""
    task = make_task(TaskSpec(name="reverse", n_train=40, n_valid=5, min_len=4, max_len=8))
    cfg, train = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                 model_overrides=dict(d_model=16, d_ff=32, n_heads=2, n_decoder_layers=2, max_len=32,
                                                      architecture="decoder-only", positions="rope", **layers),
                                 train_overrides=dict(batch_size=8, max_steps=1, max_seconds=None, eval_every=1000))
    trainer = Trainer(task, cfg, train)
    trainer.run(max_steps=1)
    save_checkpoint(checkpoint_from_trainer(trainer), folder / name)


def _positions_stage(name: str):
    at = open_link("learn", {"model": f"shipped:{name}"})
    at.selectbox(key="learn_stage").set_value(7).run()  # 8 · Where a token is: positions
    assert_no_exception(at)
    card = "\n".join(m.value for m in at.sidebar.markdown)
    return at, card, " ".join(str(m.value) for m in at.markdown)


def test_the_learn_page_and_the_card_name_the_local_and_global_layers(monkeypatch, tmp_path):
    _save(tmp_path / "ckpt", "local-global", window=4, global_every=2, logn_length=16)
    _save(tmp_path / "ckpt", "plain-rope")
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(tmp_path / "ckpt"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    at, card, text = _positions_stage("local-global")
    assert ("Layer 1 is local: RoPE rotates its queries and keys, and each query sees only the 4 latest positions"
            in text)
    assert "Layer 2 is global: each query sees every position, with no positions at all" in text
    assert "multiplied by ln n / ln 16 (log-n scaling, on layer 2 only" in text
    chart_titled(at, "local-global · RoPE (layer 1): rotation frequency of each dimension pair")
    assert ("**Positions** layer 1 local (RoPE, window 4) · layer 2 global (no positions) · queries log-n scaled "
            "past 16 keys") in card
    at, card, text = _positions_stage("plain-rope")  # without them: as before
    assert "local" not in text and "global" not in text and "log-n" not in text
    chart_titled(at, "plain-rope · RoPE: rotation frequency of each dimension pair")
    assert "**Positions**" not in card
