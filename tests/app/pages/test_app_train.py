"""AppTest: training live from the Train page (start, watch, stop, resume, save, reload) and its refusals."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, open_app, poll, texts
from transformer.data import TaskSpec, make_task
from transformer.model import ConfigError, default_configs
from transformer.store import load_bundle
from transformer.train import MAX_CONCURRENT_JOBS, JobPlan, TrainingJob
from ui.server import LIMITS, check_limits, training_threads
from ui.shell import checkpoint_zip
from ui.train import LIVE_RUN_KEY, live_checkpoint, start_run

TINY_FORM = dict(train_d_model=16, train_n_heads=2, train_n_encoder_layers=1, train_n_decoder_layers=1,
                 train_d_ff=32, train_batch_size=16, train_n_train=300, train_max_steps=50_000, train_eval_every=20,
                 train_eval_examples=10, train_probe_every=5, train_max_seconds=120.0, train_warmup_steps=0)
def _train_page(**overrides):
    at = open_app("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    for key, value in {**TINY_FORM, **overrides}.items():
        at.number_input(key=key).set_value(value)
    return at


def _run(at):
    return at.session_state[LIVE_RUN_KEY] if LIVE_RUN_KEY in at.session_state else None


def _step(at) -> int:
    run = _run(at)
    return run.job.snapshot(history_tail=1).step if run is not None else 0


def _shows_stopped(at) -> bool:
    """The page as drawn offers Resume (the job's own state can change after the page was drawn)."""
    resume = [b for b in at.button if b.key == "train_resume"]
    return bool(resume) and not resume[0].disabled and not _run(at).active


def _stop_all(*runs_or_jobs) -> None:
    for item in runs_or_jobs:
        job = getattr(item, "job", item)
        if job is not None:
            job.stop()
            job.join(20)


def test_train_watch_stop_resume_save_and_reload(studio_env):
    at = _train_page()
    at.button(key="train_start").click().run()
    run = _run(at)
    try:
        assert_no_exception(at)
        assert any(m.startswith("Training started on reverse") for m in texts(at.success))
        assert at.sidebar.selectbox(key="sidebar_model").value == f"live:{run.id}"
        assert run.plan.threads == training_threads()  # the training process leaves a core to the pages
        assert poll(at, lambda a: _step(a) >= 2), "the step count never advanced"
        at.run()  # the poll read the job after the page had drawn; this run draws step >= 2
        assert any(m.startswith("Training: step") for m in texts(at.sidebar.info))
        assert at.metric[0].label == "Step" and int(at.metric[0].value.replace(",", "")) >= 2
        at.switch_page("pages/decode.py").run()  # other pages use the live weights; the sidebar says it trains
        assert_no_exception(at)
        assert any(m.startswith("Training: step") for m in texts(at.sidebar.info))
        assert at.subheader[0].value.startswith("Step 1 of")
        at.switch_page("pages/train.py").run()
        at.button(key="train_stop").click().run()
        assert poll(at, _shows_stopped, seconds=20), "Stop did not stop the job"
        stopped_at = _step(at)
        assert stopped_at < TINY_FORM["train_max_steps"]
        at.button(key="train_resume").click().run()
        assert poll(at, lambda a: _step(a) > stopped_at), "Resume did not continue training"
        at.button(key="train_stop").click().run()
        assert poll(at, _shows_stopped, seconds=20)
        assert len(at.select_slider(key="train_timeline_step").options) >= 2  # the probe was recorded
        at.text_input(key="train_save_name").input("tiny-run")
        at.button(key="train_save").click().run()
        assert any("Saved as “tiny-run”" in m for m in texts(at.success)), texts(at.error)
        assert (studio_env / "tiny-run" / "model.safetensors").is_file()
        at.text_input(key="train_save_name").input("tiny-run")
        at.button(key="train_save").click().run()
        assert any("already exists" in e for e in texts(at.error))
        at.text_input(key="train_save_name").input("../outside")
        at.button(key="train_save").click().run()
        assert any("cannot contain" in e for e in texts(at.error))
        saved_steps = _step(at)
        at.sidebar.selectbox(key="sidebar_model").set_value("run:tiny-run").run()
        assert_no_exception(at)
        assert any(f"{saved_steps:,} steps" in m for m in texts(at.sidebar.markdown))
    finally:
        _stop_all(run)


def test_the_live_model_downloads_as_a_loadable_bundle(studio_env, tmp_path):
    at = _train_page(train_max_steps=8)
    at.button(key="train_start").click().run()
    run = _run(at)
    try:
        assert poll(at, lambda a: not _run(a).active, seconds=90)
        ckpt = load_bundle(checkpoint_zip(live_checkpoint(run)), tmp_path)
        assert ckpt.step == run.record.step == 8
        assert ckpt.optimizer_state is not None
    finally:
        _stop_all(run)


def test_bad_settings_and_data_become_messages(studio_env):
    at = _train_page(train_d_model=24, train_n_heads=5)
    at.button(key="train_start").click().run()
    assert any("Training did not start" in e and "divisible" in e for e in texts(at.error))
    at.selectbox(key="train_task").set_value("corpus").run()
    at.text_area(key="train_corpus_text").input("ich mochte ein bier -> i want a beer\nno separator here")
    at.button(key="train_start").click().run()
    assert any("line 2" in e for e in texts(at.error)), texts(at.error)
    at.radio(key="train_corpus_source").set_value("aligned").run()
    at.button(key="train_start").click().run()
    assert any("Upload both files" in e for e in texts(at.error))
    assert _run(at) is None
    assert_no_exception(at)


def test_a_full_server_makes_new_runs_wait(studio_env):
    task = make_task(TaskSpec(name="reverse", n_train=200, n_valid=10, min_len=4, max_len=8))
    model_cfg, train_cfg = default_configs("reverse", 30, 30, preset="tiny",
                                           model_overrides=dict(d_model=8, n_heads=2, d_ff=16))
    blockers = [TrainingJob(JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, max_steps=100_000,
                                    max_seconds=60)).start()
                for _ in range(MAX_CONCURRENT_JOBS)]
    at = run = None
    try:
        assert poll(open_app(), lambda a: all(j.snapshot().status == "running" for j in blockers), seconds=30)
        at = _train_page()
        at.button(key="train_start").click().run()
        run = _run(at)
        assert run.job.snapshot().status == "waiting"
        assert any(w.startswith("Waiting:") and "This run needs 1 process and starts as soon as" in w
                   for w in texts(at.warning)), texts(at.warning)
        assert any("waiting for a free training slot" in w for w in texts(at.sidebar.warning))
    finally:
        _stop_all(run, *blockers)


def test_server_side_caps_refuse_runs_the_widgets_would_not_allow(studio_env):
    task = make_task(TaskSpec(name="reverse", n_train=100, n_valid=10, min_len=4, max_len=8))
    model_cfg, train_cfg = default_configs("reverse", 30, 30, model_overrides=dict(d_model=1024, n_heads=8))
    with pytest.raises(ConfigError, match="d_model is 1,024; this app allows at most 512"):
        check_limits(model_cfg, train_cfg, max_seconds=10)
    small_model, long_train = default_configs("reverse", 30, 30, train_overrides=dict(max_steps=LIMITS.max_steps + 1))
    with pytest.raises(ConfigError, match="training steps"):
        start_run(JobPlan(task=task, model_cfg=small_model, train_cfg=long_train, max_steps=long_train.max_steps,
                          max_seconds=LIMITS.max_seconds + 1, probe="abc", probe_every=10))


def test_continue_training_the_picked_checkpoint(studio_env):
    at = _train_page()
    at.button(key="train_continue").click().run()
    run = _run(at)
    try:
        assert any(m.startswith("Continuing reverse from step 5") for m in texts(at.success)), texts(at.error)
        assert run.record.step >= 5 and run.record.state["optimizer"]["state"]  # moments restored, not fresh ones
        assert poll(at, lambda a: _step(a) > 5)
    finally:
        _stop_all(run)


def test_typed_sentence_pairs_train_a_word_level_model(studio_env):
    at = _train_page()
    at.selectbox(key="train_task").set_value("corpus").run()
    for key, value in {**TINY_FORM, "train_max_steps": 6, "train_max_len": 16}.items():
        at.number_input(key=key).set_value(value)
    assert "ich mochte ein bier -> i want a beer" in at.text_area(key="train_corpus_text").value
    at.button(key="train_start").click().run()
    run = _run(at)
    try:
        assert run is not None, texts(at.error)
        assert run.plan.task.level == "word"
        assert run.plan.task.spec["tokenizer"] == "bpe" and run.plan.task.spec["joint"] is True  # the default
        assert run.plan.model_cfg.tie_embeddings  # one joint vocabulary: tied, as in the CLI
        assert poll(at, lambda a: not _run(a).active, seconds=90)
        at.run()
        assert any(m.startswith("**Validation** (step 6") for m in texts(at.markdown)), texts(at.markdown)
    finally:
        _stop_all(run)


def test_the_corpus_vocabulary_is_chosen_on_the_page(studio_env):
    """Unigram pieces, one vocabulary per side: the run's tokenizers are what the page said, and nothing is tied."""
    at = _train_page()
    at.selectbox(key="train_task").set_value("corpus").run()
    for key, value in {**TINY_FORM, "train_max_steps": 2, "train_max_len": 16}.items():
        at.number_input(key=key).set_value(value)
    at.selectbox(key="train_tokenizer").set_value("unigram").run()
    at.number_input(key="train_vocab_size").set_value(80)
    at.checkbox(key="train_joint_vocab").uncheck().run()
    assert at.checkbox(key="train_tie").disabled  # tying needs one joint vocabulary
    at.button(key="train_start").click().run()
    run = _run(at)
    try:
        assert run is not None, texts(at.error)
        task = run.plan.task
        assert (task.spec["tokenizer"], task.spec["vocab_size"], task.spec["joint"]) == ("unigram", 80, False)
        assert task.src_tokenizer.kind == task.tgt_tokenizer.kind == "unigram"
        assert task.src_tokenizer is not task.tgt_tokenizer  # German and English pieces apart
        assert task.src_tokenizer.split("ich") != task.tgt_tokenizer.split("ich")
        assert not run.plan.model_cfg.tie_embeddings
    finally:
        _stop_all(run)
    at.run()
    at.selectbox(key="train_tokenizer").set_value("word").run()
    assert at.number_input(key="train_vocab_size").disabled and at.checkbox(key="train_joint_vocab").disabled


def test_the_probe_can_be_changed_while_training(studio_env):
    at = _train_page()
    at.button(key="train_start").click().run()
    run = _run(at)
    try:
        assert poll(at, lambda a: len(run.timeline()) > 0, seconds=60)  # the original probe is on record first
        at.text_input(key="train_probe_live").input("").run()
        at.button(key="train_probe_apply").click().run()
        assert any("Probe not changed" in e for e in texts(at.error))
        at.text_input(key="train_probe_live").input("zebra").run()
        at.button(key="train_probe_apply").click().run()
        assert run.job.probe == "zebra"
        zebra = ("z", "e", "b", "r", "a", "</s>")
        assert poll(at, lambda a: run.timeline()[-1][1].source_tokens == zebra, seconds=60)
        assert run.timeline()[0][1].source_tokens != zebra  # earlier snapshots keep the probe they recorded
    finally:
        _stop_all(run)


def test_the_form_s_plan_trains_in_its_process_and_the_server_keeps_only_a_record(studio_env, monkeypatch):
    """Train carries the form whole to the training process as one frozen plan; the server builds no Trainer (no
    model in training, no optimizer of its own) and keeps a plain record that the job extends when it ends."""
    from transformer.train import Trainer

    built: list[Trainer] = []
    real_init = Trainer.__init__
    monkeypatch.setattr(Trainer, "__init__", lambda self, *a, **k: built.append(self) or real_init(self, *a, **k))
    at = _train_page(train_max_steps=6, train_max_seconds=90.0)
    at.button(key="train_start").click().run()
    run = _run(at)
    try:
        assert run is not None, texts(at.error)
        plan = run.plan
        assert (plan.max_steps, plan.max_seconds, plan.probe_every, plan.processes) == (6, 90.0, 5, 1)
        assert (plan.model_cfg.d_model, plan.train_cfg.batch_size, plan.task.spec["n_train"]) == (16, 16, 300)
        assert poll(at, lambda a: not run.active, seconds=90)
        assert run.record.step == 6 and [r["step"] for r in run.record.history] == list(range(1, 7))
        assert run.record.evals[-1]["step"] == 6  # the process's last evaluation came back with its state
        assert built == []  # the training loop ran in the training process only
    finally:
        _stop_all(run)


@pytest.mark.slow  # trains
def test_a_run_can_keep_weight_snapshots_that_are_saved_with_it(studio_env):
    import torch

    from transformer.store import list_snapshots, load_checkpoint

    at = _train_page(train_max_steps=7)
    at.toggle(key="train_snapshots").set_value(True).run()
    at.number_input(key="train_snapshot_every").set_value(3)
    at.button(key="train_start").click().run()
    run = _run(at)
    try:
        assert run.plan.snapshot_every == 3
        assert poll(at, lambda a: not _run(a).active and _run(a).autosaved_as is not None, seconds=90)
        assert poll(at, lambda a: len(list_snapshots(studio_env / run.autosaved_as)) == 3, seconds=20)
        at.text_input(key="train_save_name").input("kept-run")
        at.button(key="train_save").click().run()
        assert any("Saved as “kept-run”" in m for m in texts(at.success)), texts(at.error)
        snapshots = list_snapshots(studio_env / "kept-run")
        assert [step for step, _ in snapshots] == [3, 6, 7]  # every 3 steps and the end
        saved = load_checkpoint(studio_env / "kept-run", load_optimizer=False).model.state_dict()
        last = load_checkpoint(snapshots[-1][1], load_optimizer=False).model.state_dict()
        first = load_checkpoint(snapshots[0][1], load_optimizer=False).model.state_dict()
        assert all(torch.equal(saved[n], w) for n, w in last.items())
        assert not all(torch.equal(saved[n], w) for n, w in first.items())
    finally:
        _stop_all(run)
