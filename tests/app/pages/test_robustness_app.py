"""Robustness matrix, app (AppTest): each bad input of the issue becomes a message on the page, never a traceback;
what the session had (its model, its run) is still there afterwards, and nothing the user supplied is executed
or written outside a private temporary directory. Also the security settings of `.streamlit/config.toml`.
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_app, poll, texts
from tests.helpers.hostile_inputs import (
    BROKEN_CHECKPOINTS,
    CORPORA,
    HOSTILE_BUNDLES,
    TEXTS,
    broken_checkpoint,
    build_word_checkpoint,
    zip_folder,
)
from tests.helpers.tiny_runs import live_run_of, start_tiny_run
from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.store import MAX_BUNDLE_BYTES, bundle_bytes, save_checkpoint
from transformer.train import AUTOSAVE_PREFIX, Trainer, checkpoint_from_trainer
from ui.server import LIMITS, limit_violations
from ui.views import md_token

TEXT_KEYS = {"home": "home_text", "decode": "decode_text", "attention": "attention_text"}


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make this process's temporary directory a fresh, empty one (returned), to see what uploads leave."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _upload(at, name: str, data: bytes):
    at.sidebar.file_uploader[0].set_value((name, data, "application/zip"))
    at.run()
    assert_no_exception(at)
    return at


# -- text ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", list(TEXT_KEYS))
def test_hostile_text_is_explained_on_every_page(studio_env, page: str) -> None:
    at = open_app(None if page == "home" else page)
    key = TEXT_KEYS[page]
    for case, hostile in TEXTS.items():
        at.text_input(key=key).set_value(hostile.text).run()
        assert_no_exception(at)
        warnings = texts(at.warning)
        if hostile.refused is not None:
            expected = hostile.app_refused or hostile.refused
            assert any(expected in w for w in warnings), (case, warnings)
        else:
            assert any(w.startswith("Not in the model's vocabulary") and md_token(hostile.unknown) in w
                       for w in warnings), (case, warnings)
    assert len(at.text_input(key=key).value) <= 10_000  # the box holds what decoding accepts, no more
    at.text_input(key=key).set_value("abc").run()  # nothing was lost: the page decodes again
    assert_no_exception(at)
    assert not at.warning
    assert at.get("vega_lite_chart")


def test_an_overlong_reference_is_explained(studio_env) -> None:
    at = open_app("decode")
    at.text_input(key="decode_reference").set_value("z" * 200_000).run()
    assert_no_exception(at)
    assert any(w.startswith("Teacher forcing: The reference has 10,000 tokens") for w in texts(at.warning))


def test_words_outside_the_vocabulary_are_named(studio_env, tmp_path: Path) -> None:
    folder = build_word_checkpoint(tmp_path / "words")
    at = _upload(open_app("decode"), "words.zip", bundle_bytes(folder))
    at.text_input(key="decode_text").set_value("ich mochte ein zebra").run()
    assert_no_exception(at)
    assert any("Not in the model's vocabulary" in w and "zebra" in w for w in texts(at.warning))


# -- checkpoints and bundles -----------------------------------------------------------------------------------
def test_hostile_uploads_are_refused_and_the_session_keeps_its_model(studio_env, tiny_checkpoint_dir: Path,
                                                                     tmp_path: Path, private_tmp: Path) -> None:
    good = tiny_checkpoint_dir / "reverse"
    uploads = {case: (zip_folder(broken_checkpoint(good, case, tmp_path / case)), message)
               for case, (_, message) in BROKEN_CHECKPOINTS.items()}
    uploads |= {case: (make(good), message) for case, (make, message) in HOSTILE_BUNDLES.items()}
    uploads["larger than the upload limit"] = (b"PK" + b"\0" * MAX_BUNDLE_BYTES, "a bundle may be at most 50 MiB")
    at = open_app("decode")
    missed = {}
    for case, (data, message) in uploads.items():
        _upload(at, f"{case}.zip", data)
        errors = texts(at.sidebar.error)
        if not any(f"{case}.zip" in e and message in e for e in errors):
            missed[case] = errors
        if at.sidebar.selectbox(key="sidebar_model").value != "shipped:reverse":
            missed[case] = "the session lost its model"
        if list(private_tmp.iterdir()):
            missed[case] = f"left files behind: {list(private_tmp.rglob('*'))}"
    assert not missed, missed
    assert not list(tmp_path.rglob("PWNED")) and not list(tmp_path.rglob("escape.json"))
    assert not Path("/tmp/escape.json").exists()
    assert at.subheader[0].value.startswith("Step 1 of")  # the page still decodes with the shipped model


def test_an_upload_never_makes_the_server_read_files_it_names(studio_env, tiny_checkpoint_dir: Path,
                                                             tmp_path: Path) -> None:
    folder = Path(shutil.copytree(tiny_checkpoint_dir / "reverse", tmp_path / "reader"))
    secret = tmp_path / "secret.txt"
    secret.write_text("the server's secret\n")
    config = json.loads((folder / "config.json").read_text())
    config["task_spec"] = {"name": "corpus", "data": [str(secret), str(secret)]}
    (folder / "config.json").write_text(json.dumps(config))
    at = _upload(open_app("train"), "reader.zip", zip_folder(folder))
    at.button(key="train_continue").click().run()
    assert_no_exception(at)
    assert any(e.startswith("Cannot continue reader") and "does not read files an upload names" in e
               for e in texts(at.error)), texts(at.error)
    assert live_run_of(at) is None
    assert not any("secret" in m for m in texts(at.markdown) + texts(at.error))


# -- corpora -------------------------------------------------------------------------------------------------------
def test_bad_corpora_are_explained_with_the_users_file_name(studio_env, private_tmp: Path) -> None:
    at = open_app("train")
    at.selectbox(key="train_task").set_value("corpus").run()
    missed = {}
    for case, (files, message) in CORPORA.items():
        aligned = len(files) == 2
        at.radio(key="train_corpus_source").set_value("aligned" if aligned else "tsv").run()
        keys = ["train_corpus_src", "train_corpus_tgt"] if aligned else ["train_corpus_tsv"]
        for key, (name, data) in zip(keys, files.items(), strict=True):
            at.file_uploader(key=key).set_value((name, data, "text/plain"))
        at.button(key="train_start").click().run()
        assert_no_exception(at)
        errors = texts(at.error)
        if not any(e.startswith("Training did not start") and message in e and next(iter(files)) in e
                   for e in errors):
            missed[case] = errors
        if any(str(private_tmp) in e for e in errors):
            missed[case] = f"the message shows a server path: {errors}"
    assert not missed, missed
    assert live_run_of(at) is None
    assert not list(private_tmp.iterdir())  # the private copies are gone


def test_an_upload_named_like_a_path_is_read_from_a_private_copy(studio_env, private_tmp: Path) -> None:
    at = open_app("train")
    at.selectbox(key="train_task").set_value("corpus").run()
    at.radio(key="train_corpus_source").set_value("tsv").run()
    content = b"ich bin\ti am\nno tab here\n"
    at.file_uploader(key="train_corpus_tsv").set_value(("../../pairs.tsv", content, "text/plain"))
    at.button(key="train_start").click().run()
    assert_no_exception(at)
    assert any("../../pairs.tsv, line 2" in e for e in texts(at.error)), texts(at.error)
    assert not list(private_tmp.iterdir()) and not list(private_tmp.parent.rglob("pairs.tsv"))  # no copy escaped


# -- hyperparameters ---------------------------------------------------------------------------------------------
def test_impossible_hyperparameters_are_refused(studio_env) -> None:
    at = open_app("train")
    at.number_input(key="train_n_heads").set_value(0).run()
    assert_no_exception(at)
    assert at.number_input(key="train_n_heads").value >= 1  # the server resets a value outside the widget's range
    at.number_input(key="train_d_model").set_value(24)
    at.number_input(key="train_n_heads").set_value(5)
    at.button(key="train_start").click().run()
    assert any("Training did not start" in e and "divisible" in e for e in texts(at.error))
    assert live_run_of(at) is None


def _checkpoint_over_the_caps(root: Path, *, layers: int = 1, step: int = 1) -> Path:
    task = make_task(TaskSpec(name="reverse", n_train=50, n_valid=5, min_len=3, max_len=5))
    model_cfg, train_cfg = default_configs("reverse", 30, 30, model_overrides=dict(
        d_model=8, n_heads=2, d_ff=8, n_encoder_layers=layers, n_decoder_layers=1), train_overrides=dict(batch_size=4))
    trainer = Trainer(task, model_cfg, train_cfg)
    trainer.train_step()
    ckpt = checkpoint_from_trainer(trainer)
    ckpt.step = step
    return save_checkpoint(ckpt, root / f"layers{layers}-step{step}")


@pytest.mark.parametrize("layers, step, message", [
    (LIMITS.max_layers + 1, 1, "This run is too large for the app: encoder layers is 7; this app allows at most 6"),
    (1, LIMITS.max_steps - 10, "passes this app's cap of 50,000 steps"),
], ids=["model over the caps", "steps over the cap"])
def test_continuing_an_upload_past_the_caps_is_refused(studio_env, tmp_path: Path, layers: int, step: int,
                                                       message: str) -> None:
    at = _upload(open_app("train"), "big.zip", bundle_bytes(_checkpoint_over_the_caps(tmp_path, layers=layers,
                                                                                       step=step)))
    at.button(key="train_continue").click().run()
    assert_no_exception(at)
    assert any(e.startswith("Cannot continue") and message in e for e in texts(at.error)), texts(at.error)
    assert live_run_of(at) is None


def test_a_huge_vocabulary_counts_against_the_parameter_cap() -> None:
    model_cfg, train_cfg = default_configs("corpus", 200_000, 200_000)
    problems = limit_violations(model_cfg, train_cfg, max_seconds=60)
    assert any(p.startswith("parameters is 157,487,424; this app allows at most 100,000,000") for p in problems)


def test_a_non_finite_loss_stops_the_run_with_a_message_and_keeps_the_last_good_weights(studio_env, monkeypatch,
                                                                                       forked_jobs):
    real_loss = Trainer.loss

    def nan_at_step_3(self: Trainer, batch):
        loss, correct = real_loss(self, batch)
        return (loss * float("nan"), correct) if self.step == 2 else (loss, correct)

    monkeypatch.setattr(Trainer, "loss", nan_at_step_3)
    at = open_app("train")
    run = start_tiny_run(at, train_max_steps=50)
    try:
        assert poll(at, lambda a: not live_run_of(a).active, seconds=60)
        at.run()
        assert any("the loss became nan at step 3" in e and "last finite step were kept" in e for e in texts(at.error))
        assert any("failed at step 2" in c for c in texts(at.sidebar.caption))
        _, published = run.job.latest_model()
        trained = run.record.model(run.plan.model_cfg)  # the weights the process handed back
        for kept, weights in zip(published.parameters(), trained.parameters(), strict=True):
            assert kept.isfinite().all() and kept.equal(weights)
        monkeypatch.setattr(Trainer, "loss", real_loss)
        at.switch_page("pages/decode.py").run()  # the model is still usable
        assert_no_exception(at)
        assert at.subheader[0].value.startswith("Step 1 of")
        at.switch_page("pages/train.py").run()
        at.button(key="train_resume").click().run()
        assert poll(at, lambda a: run.record.step > 2 and not run.active, seconds=60)
    finally:
        run.job.stop()
        run.job.join(20)


# -- names for saved runs ------------------------------------------------------------------------------------------
def test_bad_run_names_are_refused_and_nothing_is_silently_overwritten(studio_env) -> None:
    at = open_app("train")
    run = start_tiny_run(at)
    try:
        assert poll(at, lambda a: not live_run_of(a).active, seconds=60)
        at.run()  # the page as drawn after the run ended
        refused = {"a/b": "cannot contain", "a\\b": "cannot contain", "..": "cannot contain",
                   "../../etc": "cannot contain", "x" * 65: "at most 64 characters", ".hidden": "cannot start with",
                   "  ": "Give the run a name"}
        for name, message in refused.items():
            at.text_input(key="train_save_name").input(name)
            at.button(key="train_save").click().run()
            assert any(e.startswith("Not saved") and message in e for e in texts(at.error)), (name, texts(at.error))
        assert not studio_env.exists() or \
            not [p for p in studio_env.iterdir() if not p.name.startswith(AUTOSAVE_PREFIX)]
        at.text_input(key="train_save_name").input("first")
        at.button(key="train_save").click().run()
        assert any("Saved as “first”" in m for m in texts(at.success))
        before = {p.name: p.stat().st_mtime_ns for p in (studio_env / "first").iterdir()}
        at.button(key="train_save").click().run()
        assert any("already exists" in e for e in texts(at.error))
        assert {p.name: p.stat().st_mtime_ns for p in (studio_env / "first").iterdir()} == before
        at.checkbox(key="train_save_overwrite").check()
        at.button(key="train_save").click().run()
        assert any("Saved as “first”" in m for m in texts(at.success))  # replacing it has to be asked for
        assert [p.name for p in studio_env.iterdir() if not p.name.startswith(AUTOSAVE_PREFIX)] == ["first"]
    finally:
        run.job.stop()
        run.job.join(20)


# -- security settings -------------------------------------------------------------------------------------------
def test_server_settings_protect_against_cross_site_requests_and_hide_error_details() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["enableXsrfProtection"] is True
    assert config["client"]["showErrorDetails"] == "none"
    assert config["server"]["maxUploadSize"] * 2**20 == MAX_BUNDLE_BYTES  # the browser refuses what we would


def test_no_code_path_unpickles_a_file() -> None:
    sources = [p for folder in ("transformer", "ui", "pages") for p in (ROOT / folder).rglob("*.py")]
    sources.append(ROOT / "app.py")
    unsafe = re.compile(r"\bpickle\b|\bdill\b|\bjoblib\b|\bmarshal\b|torch\.load\(|\.load_state_dict\(torch\.load|"
                        r"weights_only\s*=\s*False|(?<![.\w])eval\(|(?<![.\w])exec\(|"
                        r"trust_remote_code\s*=\s*True|use_safetensors\s*=\s*False")
    found = {str(p.relative_to(ROOT)): unsafe.findall(p.read_text()) for p in sources}
    # The one exception: the training process and the server talk over a pipe between themselves, never a file.
    ipc = (ROOT / "transformer" / "train" / "job_messages.py").read_text()
    assert re.findall(r"pickle\.loads?\((.*)\)", ipc) == ["conn.recv_bytes()"]
    assert {path: hits for path, hits in found.items() if hits and path != "transformer/train/job_messages.py"} == {}
