"""Faults: a save killed half-way, write errors, an exception in the training worker, a session that goes away.

The killed save is real: a child process runs `python -m transformer train`, pauses inside `save_checkpoint` at
a chosen point (its own write functions are wrapped to stop there) and is sent SIGKILL.
"""
from __future__ import annotations

import errno
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import weakref
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_app, poll, texts
from tests.helpers.tiny_runs import start_tiny_run
from transformer.cli import main
from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.store import CheckpointError, list_checkpoints, load_checkpoint
from transformer.store import checkpoint as checkpoints
from transformer.train import AUTOSAVE_PREFIX, JobPlan, Trainer, TrainingJob, job_supervisor, server_runs

pytestmark = pytest.mark.slow

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
# Runs `python -m transformer` with save_checkpoint's writers wrapped: at the file named by argv[1] (or just
# before the finished directory is moved into place) it writes half the file, says KILL-ME and waits.
CHILD = textwrap.dedent('''
    import sys, time
    import transformer.store.checkpoint as ck
    point = sys.argv[1]

    def pause(path=None):
        if path is not None:
            data = path.read_bytes()
            path.write_bytes(data[: len(data) // 2])
        print("KILL-ME", flush=True)
        time.sleep(600)

    def wrap(write):
        def wrapped(path, *args, **kwargs):
            write(path, *args, **kwargs)
            if path.name == point:
                pause(path)
        return wrapped

    ck.write_tensors, ck.write_json, ck.write_durably = wrap(ck.write_tensors), wrap(ck.write_json), \\
        wrap(ck.write_durably)
    if point == "before the swap":
        ck.replace_directory = ck._move_into_place = lambda *args: pause()
    from transformer.cli import main
    sys.exit(main(sys.argv[2:]))
''')


def kill_during_save(point: str, *argv: str) -> None:
    """Run the CLI in a child process and SIGKILL it when it reaches `point` inside save_checkpoint."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, point, *argv], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        reached = any(line.strip() == "KILL-ME" for line in proc.stdout)
        assert reached, proc.stderr.read()
    finally:
        proc.kill()
        proc.wait(timeout=60)
    assert proc.returncode == -9  # it died mid-save, it did not finish


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def previous(tiny_checkpoint_dir: Path, tmp_path: Path) -> Path:
    """A runs directory holding one saved run, `run` (step 5); returns the run."""
    return Path(shutil.copytree(tiny_checkpoint_dir / "reverse", tmp_path / "runs" / "run"))


# -- a save interrupted half-way --------------------------------------------------------------------------------
@pytest.mark.parametrize("point", ["model.safetensors", "history.json", "config.json", "before the swap"])
def test_killing_a_save_over_a_run_leaves_the_previous_checkpoint_intact(previous: Path, point: str) -> None:
    before = files_of(previous)
    kill_during_save(point, "train", "--resume", str(previous), "--steps", "7", "--out", str(previous))
    assert files_of(previous) == before
    assert load_checkpoint(previous).step == 5
    assert list_checkpoints(previous.parent) == [previous]  # the half-written copy is never listed
    leftovers = [p for p in previous.parent.iterdir() if p != previous]
    assert leftovers and all(p.name.startswith(".run.tmp-") for p in leftovers)
    for leftover in leftovers:
        if point == "before the swap":  # every file was written: complete, just never moved into place
            assert load_checkpoint(leftover).step == 7
        else:  # config.json is written last, so a half-written directory never loads
            with pytest.raises(CheckpointError, match="config.json: (file is missing|not a readable JSON)"):
                load_checkpoint(leftover)


def test_the_app_never_lists_a_run_whose_save_was_killed(previous: Path, tiny_checkpoint_dir: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    kill_during_save("model.safetensors", "train", "--resume", str(previous), "--steps", "7",
                     "--out", str(previous.parent / "new"))
    assert not (previous.parent / "new").exists()
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(tiny_checkpoint_dir))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(previous.parent))
    at = open_app()
    assert at.sidebar.selectbox(key="sidebar_model").options == ["reverse  ·  Shipped", "run  ·  Saved run"]


# -- write errors ----------------------------------------------------------------------------------------------
def disk_full(path: Path, *args) -> None:
    raise OSError(errno.ENOSPC, "No space left on device", str(path))


def permission_denied(*args, **kwargs):
    raise PermissionError(errno.EACCES, "Permission denied")


def test_a_full_disk_during_a_cli_save_is_a_message_and_keeps_the_old_checkpoint(
        previous: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    before = files_of(previous)
    monkeypatch.setattr(checkpoints, "write_tensors", disk_full)
    code = main(["train", "--resume", str(previous), "--steps", "7", "--out", str(previous)])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines()[-1] == (f"error: cannot save checkpoint to {previous}: "
                                                  "No space left on device")
    assert files_of(previous) == before
    assert [p.name for p in previous.parent.iterdir()] == ["run"]


def test_an_unwritable_output_directory_is_refused_before_training(previous: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(tempfile, "mkdtemp", permission_denied)  # a read-only directory, even for root
    code = main(["train", "--resume", str(previous), "--steps", "7", "--out", str(tmp_path / "ro" / "run")])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.startswith("error: cannot write to") and "Permission denied" in captured.err
    assert "training" not in captured.err  # it failed before spending time on training


def test_a_write_error_in_the_app_is_a_message_and_keeps_the_old_run(studio_env, monkeypatch) -> None:
    at = open_app("train")
    run = start_tiny_run(at)
    assert poll(at, lambda a: not run.active, seconds=60)
    at.run()
    at.text_input(key="train_save_name").input("keep")
    at.button(key="train_save").click().run()
    before = files_of(studio_env / "keep")
    at.checkbox(key="train_save_overwrite").check()
    for fault, target, message in ((disk_full, "write_tensors", "cannot save checkpoint to keep: No space left"),
                                   (permission_denied, "mkdtemp", "Permission denied")):
        with monkeypatch.context() as patch:
            patch.setattr(checkpoints if target == "write_tensors" else tempfile, target, fault)
            at.button(key="train_save").click().run()
        assert_no_exception(at)
        assert any(e.startswith("Not saved") and message in e for e in texts(at.error)), texts(at.error)
        assert not any(str(studio_env) in e for e in texts(at.error))  # no server paths in messages
        assert files_of(studio_env / "keep") == before
        assert [p.name for p in studio_env.iterdir() if not p.name.startswith(AUTOSAVE_PREFIX)] == ["keep"]
    at.button(key="train_save").click().run()  # the run itself was never at risk: saving works again
    assert any("Saved as “keep”" in m for m in texts(at.success))
    assert load_checkpoint(studio_env / "keep").step == run.record.step


# -- an exception inside the training worker ----------------------------------------------------------------------
def test_a_crash_in_the_worker_is_shown_and_the_model_and_app_keep_working(studio_env, monkeypatch,
                                                                          forked_jobs) -> None:
    real_step = Trainer.train_step

    def fault_at_step_3(self: Trainer):
        if self.step == 2:
            raise RuntimeError("simulated fault in the worker")
        return real_step(self)

    monkeypatch.setattr(Trainer, "train_step", fault_at_step_3)
    at = open_app("train")
    run = start_tiny_run(at, train_max_steps=40)
    try:
        assert poll(at, lambda a: not run.active, seconds=60)
        at.run()
        assert any("training failed: RuntimeError: simulated fault in the worker" in e for e in texts(at.error))
        assert any("Last run: failed at step 2" in c for c in texts(at.sidebar.caption))
        assert open_app().sidebar.selectbox(key="sidebar_model").value == "shipped:reverse"  # other sessions: fine
        at.switch_page("pages/decode.py").run()  # this session decodes with the run's last weights
        assert_no_exception(at)
        assert at.sidebar.selectbox(key="sidebar_model").value == f"live:{run.id}"
        assert at.subheader[0].value.startswith("Step 1 of")
        monkeypatch.setattr(Trainer, "train_step", real_step)
        at.switch_page("pages/train.py").run()
        at.button(key="train_resume").click().run()
        assert poll(at, lambda a: run.record.step == 40 and not run.active, seconds=60)
    finally:
        run.job.stop()
        run.job.join(20)


# -- a browser session that goes away -----------------------------------------------------------------------------
def test_a_run_whose_tab_closes_trains_to_its_budget_is_autosaved_and_then_freed(studio_env, monkeypatch) -> None:
    baseline = job_supervisor.running_jobs()
    at = open_app("train")
    run = start_tiny_run(at, train_max_steps=30, train_max_seconds=600.0)
    job, run_id = run.job, run.id
    assert job.snapshot().active  # the server owns the run, not the tab
    del at, run  # the tab is closed: no more reruns
    assert job.join(timeout=60), "the run did not end at its budget"
    model, record = weakref.ref(job.latest_model()[1]), weakref.ref(job.record)
    snap = job.snapshot(history_tail=1)
    assert snap.status == "finished" and snap.step == 30
    assert job._thread not in threading.enumerate() and job_supervisor.running_jobs() == baseline
    assert load_checkpoint(studio_env / f"{AUTOSAVE_PREFIX}reverse-{run_id[:8]}").step == 30
    monkeypatch.setattr(server_runs, "keep_ended", 0)
    server_runs.prune()  # the server forgets ended runs beyond the newest few; the autosave stays
    job = None
    gc.collect()
    assert model() is None and record() is None  # nothing holds the run's model or its record any more


def test_a_waiting_job_that_is_stopped_never_takes_a_slot() -> None:
    task = make_task(TaskSpec(name="reverse", n_train=100, n_valid=5, min_len=3, max_len=6))
    model_cfg, train_cfg = default_configs("reverse", 30, 30, preset="tiny",
                                           model_overrides=dict(d_model=8, n_heads=2, d_ff=16))
    blockers = [TrainingJob(JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, max_steps=100_000)).start()
                for _ in range(job_supervisor.MAX_CONCURRENT_JOBS)]
    try:
        deadline = time.monotonic() + 30
        while not all(b.snapshot().status == "running" for b in blockers) and time.monotonic() < deadline:
            time.sleep(0.05)
        waiting = TrainingJob(JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, max_steps=5)).start()
        time.sleep(0.5)
        assert waiting.snapshot().status == "waiting"
        waiting.stop()
        assert waiting.join(timeout=30)
        snap = waiting.snapshot()
        assert snap.status == "stopped" and snap.step == 0 and snap.message == "stopped before it started"
        assert all(b.snapshot().active for b in blockers)
    finally:
        for job in blockers:
            job.stop()
            job.join(20)
