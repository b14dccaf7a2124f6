"""Every model a session can pick (shipped, saved runs, uploads, live runs, Hugging Face) and the one it uses now."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from transformer.adapters import HFModelError, adapter_for
from transformer.model import Network
from transformer.store import (
    Checkpoint,
    CheckpointError,
    checkpoint_family,
    list_checkpoints,
    load_bundle,
    load_checkpoint,
    model_card,
)
from transformer.train import LiveRun, server_runs
from ui.server import checkpoints_root, preferred_default, runs_root

from .hf import hf_folder_options, hf_options, resolve_hf
from .options import (
    HF,
    LIVE,
    LOAD_ERROR_KEY,
    MAX_UPLOADS,
    MODEL_KEY,
    RUN,
    SHIPPED,
    UPLOAD,
    UPLOADS_KEY,
    ActiveModel,
    ModelOption,
    UploadedModel,
)


@st.cache_resource(max_entries=16, show_spinner="Loading model…")
def load_shared_checkpoint(path: str, stamp: int) -> Checkpoint:
    """A checkpoint from disk, shared read-only by all sessions (eval mode, no optimizer state)."""
    return load_checkpoint(path, load_optimizer=False)


def _uploads() -> dict[str, UploadedModel]:
    return st.session_state.setdefault(UPLOADS_KEY, {})


RESOLVED_KEY = "studio_resolved_model"  # (this run's cursors, the picker's value, the model it resolved to)
PAGE_FAMILIES = ("encoder-decoder", "decoder-only", "encoder-only")  # every family the pages draw (they ask the trace
# for its kinds)


def _listed(root: Path) -> list[Path]:
    """Checkpoint folders under `root` whose family the pages can draw."""
    return [p for p in list_checkpoints(root) if checkpoint_family(p) in PAGE_FAMILIES]


def _on_disk() -> list[ModelOption]:
    return ([ModelOption(f"{SHIPPED}:{p.name}", p.name, SHIPPED, p) for p in _listed(checkpoints_root())]
            + [ModelOption(f"{RUN}:{p.name}", p.name, RUN, p) for p in _listed(runs_root())])


def model_options() -> list[ModelOption]:
    """Every model this session can pick: shipped, saved runs, its uploads, live runs and Hugging Face models."""
    options = _on_disk()
    options += [ModelOption(f"{UPLOAD}:{u.id}", u.name, UPLOAD) for u in _uploads().values()]
    options += [ModelOption(live_option_id(run), run.name, LIVE) for run in server_runs.runs()]
    return options + hf_options()


def shared_model(option_id: str | None) -> ActiveModel | None:
    """The model behind an option every session sees (shipped, saved run, Hugging Face folder; None: the default),
    loaded into the shared cache; None for any other id or a model that does not load. Needs no session: the
    server calls it for a link before the link's session exists."""
    options = [*_on_disk(), *hf_folder_options()]
    option_id = option_id if option_id is not None else default_option_id(options)
    option = next((o for o in options if o.id == option_id), None)
    if option is None:
        return None
    try:
        return resolve_hf(option, new_session=True) if option.source == HF else _from_disk(option)
    except (CheckpointError, HFModelError):
        return None


def live_option_id(run: LiveRun) -> str:
    """The picker's id of a live run of this server."""
    return f"{LIVE}:{run.id}"


def run_of(option: ModelOption) -> LiveRun | None:
    """The server's run behind a LIVE option (None once the server has forgotten it)."""
    return server_runs.get(option.id.split(":", 1)[1]) if option.source == LIVE else None


def default_option_id(options: list[ModelOption]) -> str | None:
    """The shipped model the app opens on (see settings.preferred_default), else the first option."""
    shipped = [o.name for o in options if o.source == SHIPPED]
    name = preferred_default(shipped)
    if name is not None:
        return f"{SHIPPED}:{name}"
    return options[0].id if options else None


def selected_option() -> ModelOption | None:
    """The picked option; the default one when nothing (still existing) was picked."""
    options = model_options()
    by_id = {o.id: o for o in options}
    chosen = st.session_state.get(MODEL_KEY)
    if chosen not in by_id:
        chosen = default_option_id(options)
    return by_id.get(chosen) if chosen is not None else None


def _examples(metrics: dict, evals: list[dict]) -> tuple[tuple[str, str], ...]:
    """The last evaluation's (source, reference) examples, those the model got exactly right first (the first is the
    pages' default input: a newcomer's first look shows the model at its best, not a mistranslation)."""
    rows: list = metrics.get("examples") or next((e.get("examples") for e in reversed(evals) if e.get("examples")), [])
    rows = [r for r in rows
            if isinstance(r, dict) and isinstance(r.get("source"), str) and isinstance(r.get("reference"), str)]
    rows.sort(key=lambda r: str(r.get("output", "")).strip() != r["reference"].strip())  # stable: right ones first
    return tuple((r["source"], r["reference"]) for r in rows)


def _stream_examples(examples: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """A stream model's examples (induction, recall: source "", reference the stream) as the prompts it reads: the
    stream itself, as a live run's probe (its rows predict the tokens the stream determines); others' as they are."""
    if examples and not any(source for source, _ in examples):
        return tuple((stream, "") for _, stream in examples if stream)
    return examples


def _from_checkpoint(option: ModelOption, ckpt: Checkpoint, cache_key: str) -> ActiveModel:
    card = ckpt.card()
    card["name"] = option.name
    examples = _stream_examples(_examples(ckpt.metrics, ckpt.evals))
    return ActiveModel(option, cache_key, ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, ckpt.task_spec,
                       card, examples, ckpt, weights_step=ckpt.step,
                       adapter=adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name=option.name,
                                           task=ckpt.task_spec.get("name")))


def checkpoint_stamp(path: Path) -> int:
    """Changes whenever a checkpoint directory is replaced (saving renames a new directory into place)."""
    try:
        return (path / "config.json").stat().st_mtime_ns + path.stat().st_ino
    except OSError:
        return 0


def live_card(run: LiveRun, model: Network, step: int, elapsed: float, evals: tuple[dict, ...]) -> dict:
    """The sidebar card of the live run, with the keys of Checkpoint.card()."""
    task = run.plan.task
    return model_card(run.name, task.name, task.level, run.plan.model_cfg, model.num_parameters(), step,
                      elapsed, evals[-1] if evals else {})


def _from_live(option: ModelOption, run: LiveRun) -> ActiveModel:
    with run.lock:
        job, number = run.job, run.job_number
    version, model = job.latest_model()
    if model is None:
        raise CheckpointError("the live run has not published its first weights yet")
    snap = job.snapshot(history_tail=1)
    task = job.plan.task
    examples = tuple((e.source, e.target) for e in task.valid[:5])
    card = live_card(run, model, snap.step, snap.elapsed, snap.evals)
    return ActiveModel(option, live_cache_key(run, number, version), model, task.src_tokenizer, task.tgt_tokenizer,
                       dict(task.spec), card, ((run.probe, ""), *examples), weights_step=snap.weights_step,
                       weights_time=snap.weights_time,
                       adapter=adapter_for(model, task.src_tokenizer, task.tgt_tokenizer, name=option.name,
                                           task=task.name))


def _from_disk(option: ModelOption) -> ActiveModel:
    if option.path is None:
        raise CheckpointError(f"{option.name} names no folder")
    stamp = checkpoint_stamp(option.path)
    return _from_checkpoint(option, load_shared_checkpoint(str(option.path), stamp),
                            f"{option.source}:{option.path}:{stamp}")


def live_cache_key(run: LiveRun, job_number: int, version: int) -> str:
    """Decoding results of a live run are cached per weights version (a new job restarts the versions)."""
    return f"{LIVE}:{run.id}:{job_number}:{version}"


def resolve(option: ModelOption) -> ActiveModel:
    """Load the model behind an option; raises CheckpointError for a broken checkpoint."""
    if option.source in (SHIPPED, RUN):
        return _from_disk(option)
    if option.source == UPLOAD:
        upload = _uploads()[option.id.split(":", 1)[1]]
        return _from_checkpoint(option, upload.checkpoint, f"{UPLOAD}:{upload.id}")
    if option.source == HF:
        return resolve_hf(option)
    run = run_of(option)
    if run is None:
        raise CheckpointError("the server no longer holds this run; its autosave is listed under Saved run")
    return _from_live(option, run)


def current_model() -> ActiveModel | None:
    """The model the pages use now, or None (no checkpoint at all, or it failed to load: see LOAD_ERROR_KEY).

    Resolved once per script run (a rerun, or a fragment's run: a live run's newest weights show at the next one)
    and looked up after that: the model folders are scanned once, not at every caller."""
    ctx = get_script_run_ctx()
    run = ctx.cursors if ctx is not None else None  # a new dict at every run; kept in the memo, so never reused
    chosen = st.session_state.get(MODEL_KEY)
    memo = st.session_state.get(RESOLVED_KEY)
    if run is not None and memo is not None and memo[0] is run and memo[1] == chosen:
        return memo[2]
    active = _resolve_current()
    if run is not None:
        st.session_state[RESOLVED_KEY] = (run, chosen, active)
    return active


def _resolve_current() -> ActiveModel | None:
    option = selected_option()
    st.session_state[LOAD_ERROR_KEY] = None
    if option is None:
        return None
    try:
        return resolve(option)
    except (CheckpointError, HFModelError) as exc:
        st.session_state[LOAD_ERROR_KEY] = f"Cannot load {option.name}: {exc}"
        return None


def add_upload(name: str, data: bytes) -> UploadedModel:
    """Validate and load an uploaded bundle into this session; raises CheckpointError."""
    workdir = Path(tempfile.mkdtemp(prefix="attention-studio-upload-"))
    try:
        ckpt = load_bundle(data, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    ckpt.path = None
    upload = UploadedModel(Path(name).stem[:64] or "upload", ckpt, data)
    uploads = _uploads()
    while len(uploads) >= MAX_UPLOADS:
        uploads.pop(next(iter(uploads)))
    uploads[upload.id] = upload
    return upload


def uploaded_bundle(option: ModelOption) -> bytes | None:
    """The bytes the user uploaded for an UPLOAD option."""
    upload = _uploads().get(option.id.split(":", 1)[1])
    return upload.bundle if upload is not None else None


def uploaded_checkpoint(option: ModelOption) -> Checkpoint:
    """The checkpoint behind an UPLOAD option (with optimizer state, if the bundle had it)."""
    upload = _uploads().get(option.id.split(":", 1)[1])
    if upload is None:
        raise CheckpointError("the uploaded model is no longer in this session")
    return upload.checkpoint


def train_page_note() -> None:
    """On the Train page: imported models are looked at, never trained here."""
    option = selected_option()
    if option is not None and option.source == HF:
        st.info(f"{option.name} is an imported Hugging Face model: it is not trained here. Training starts a new "
                "model of our own.", icon=":material/info:")
