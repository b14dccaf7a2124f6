"""The current model: a shipped checkpoint, a saved run, an uploaded bundle or the live training run."""
from __future__ import annotations

import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st

from transformer.charts import text_width
from transformer.data import Tokenizer
from transformer.decode import NativeSeq2Seq
from transformer.model import HFModelError, InspectableSeq2Seq, Seq2SeqTransformer
from transformer.store import (Checkpoint, CheckpointError, list_checkpoints, load_bundle, load_checkpoint,
                               model_card)
from transformer.train import registry
from ui.live_run import LiveRun, server_runs
from ui.settings import checkpoints_root, preferred_default, runs_root

SHIPPED, RUN, UPLOAD, LIVE, HF = "shipped", "run", "upload", "live", "hf"
MODEL_KEY = "sidebar_model"
UPLOADS_KEY = "sidebar_uploads"
LOAD_ERROR_KEY = "sidebar_load_error"
MAX_UPLOADS = 5  # per session; the oldest upload is forgotten first
SIDEBAR_PX = 360  # the sidebar's least width (ui.theme; Streamlit's 300 cut "autosave-reverse-…  ·  Saved run")
# what text_width may give a picker label: its box holds ~250 pixels of 14-pixel Source Sans, which runs ~13%
# narrower than text_width's estimate (measured in Chromium)
PICKER_LABEL_PX, PICKER_FONT_PX = 280, 14
_SOURCE_LABELS = {SHIPPED: "Shipped", RUN: "Saved run", UPLOAD: "Uploaded", LIVE: "Live training", HF: "Hugging Face"}


@dataclass(frozen=True)
class ModelOption:
    """One entry of the sidebar's model picker."""

    id: str
    name: str
    source: str
    path: Path | None = None

    @property
    def label(self) -> str:
        """What the picker shows: name and where the model comes from."""
        return f"{self.name}  ·  {_SOURCE_LABELS[self.source]}"

    @property
    def short_label(self) -> str:
        """`label` fitted to the sidebar's picker: a long name loses its middle ("reverse-lo…-11-23  ·  Saved run"),
        never the source (the picker used to cut "Uploaded" to "Uploadec")."""
        source = f"  ·  {_SOURCE_LABELS[self.source]}"
        budget = PICKER_LABEL_PX - text_width(source, PICKER_FONT_PX)
        name = self.name
        keep = len(name)
        while keep > 4 and text_width(name, PICKER_FONT_PX) > budget:
            keep -= 1
            name = self.name[: (keep + 1) // 2] + "…" + self.name[len(self.name) - keep // 2:]
        return name + source


@dataclass(frozen=True)
class ActiveModel:
    """The model pages decode with, plus what the sidebar shows about it."""

    option: ModelOption
    cache_key: str  # unique per weights: decoding results are cached under it
    model: Seq2SeqTransformer | None  # None for a Hugging Face model (see `lm`)
    src_tokenizer: Tokenizer | None
    tgt_tokenizer: Tokenizer | None
    task_spec: dict
    card: dict
    examples: tuple[tuple[str, str], ...] = ()  # (source, reference) pairs known to the model's task
    checkpoint: Checkpoint | None = field(default=None, repr=False)
    weights_step: int | None = None  # the training step the weights are from
    weights_time: float | None = None  # when a live run published them (time.time()); None for checkpoints
    lm: InspectableSeq2Seq | None = field(default=None, repr=False)  # set for Hugging Face models

    @property
    def decoder(self) -> InspectableSeq2Seq:
        """The model behind the interface decoding, traces and export use."""
        if self.lm is not None:
            return self.lm
        return NativeSeq2Seq(self.model, self.src_tokenizer, self.tgt_tokenizer, self.option.name)

    @property
    def task_name(self) -> str:
        """Name of the task the model was trained on."""
        return str(self.task_spec.get("name", "?"))

    @property
    def level(self) -> str:
        """"char", "word" or (Hugging Face models) "subword": how the model's tokenizers split text."""
        return "subword" if self.src_tokenizer is None else self.src_tokenizer.kind


@dataclass
class UploadedModel:
    """A checkpoint bundle the user uploaded; lives in this session only."""

    name: str
    checkpoint: Checkpoint
    bundle: bytes
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


@st.cache_resource(max_entries=16, show_spinner="Loading model…")
def load_shared_checkpoint(path: str, stamp: int) -> Checkpoint:
    """A checkpoint from disk, shared read-only by all sessions (eval mode, no optimizer state)."""
    return load_checkpoint(path, load_optimizer=False)


def _uploads() -> dict[str, UploadedModel]:
    return st.session_state.setdefault(UPLOADS_KEY, {})


def model_options() -> list[ModelOption]:
    """Every model this session can pick: shipped, saved runs, its uploads and its live run."""
    options = [ModelOption(f"{SHIPPED}:{p.name}", p.name, SHIPPED, p) for p in list_checkpoints(checkpoints_root())]
    options += [ModelOption(f"{RUN}:{p.name}", p.name, RUN, p) for p in list_checkpoints(runs_root())]
    options += [ModelOption(f"{UPLOAD}:{u.id}", u.name, UPLOAD) for u in _uploads().values()]
    options += [ModelOption(live_option_id(run), run.name, LIVE) for run in server_runs()]
    from ui.hf_models import hf_options  # it builds on this module
    return options + hf_options()


def live_option_id(run: LiveRun) -> str:
    """The picker's id of a live run of this server."""
    return f"{LIVE}:{run.id}"


def run_of(option: ModelOption) -> LiveRun | None:
    """The server's run behind a LIVE option (None once the server has forgotten it)."""
    return registry.get(option.id.split(":", 1)[1]) if option.source == LIVE else None


def default_option_id(options: list[ModelOption]) -> str | None:
    """The shipped model the app opens on (see settings.preferred_default), else the first option."""
    shipped = [o.name for o in options if o.source == SHIPPED]
    name = preferred_default(shipped)
    if name is not None:
        return f"{SHIPPED}:{name}"
    return options[0].id if options else None


def select_model(option_id: str) -> None:
    """Make `option_id` the current model (before the sidebar's picker is drawn, or from a callback)."""
    st.session_state[MODEL_KEY] = option_id


def selected_option() -> ModelOption | None:
    """The picked option; the default one when nothing (still existing) was picked."""
    options = model_options()
    by_id = {o.id: o for o in options}
    chosen = st.session_state.get(MODEL_KEY)
    if chosen not in by_id:
        chosen = default_option_id(options)
    return by_id.get(chosen) if chosen is not None else None


def _examples(metrics: dict, evals: list[dict]) -> tuple[tuple[str, str], ...]:
    rows = metrics.get("examples") or next((e.get("examples") for e in reversed(evals) if e.get("examples")), [])
    return tuple((r["source"], r["reference"]) for r in rows
                 if isinstance(r, dict) and isinstance(r.get("source"), str) and isinstance(r.get("reference"), str))


def _from_checkpoint(option: ModelOption, ckpt: Checkpoint, cache_key: str) -> ActiveModel:
    card = ckpt.card()
    card["name"] = option.name
    return ActiveModel(option, cache_key, ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, ckpt.task_spec,
                       card, _examples(ckpt.metrics, ckpt.evals), ckpt, weights_step=ckpt.step)


def checkpoint_stamp(path: Path) -> int:
    """Changes whenever a checkpoint directory is replaced (saving renames a new directory into place)."""
    try:
        return (path / "config.json").stat().st_mtime_ns + path.stat().st_ino
    except OSError:
        return 0


def live_card(run: LiveRun, model: Seq2SeqTransformer, step: int, elapsed: float, evals: tuple[dict, ...]) -> dict:
    """The sidebar card of the live run, with the keys of Checkpoint.card()."""
    task = run.trainer.task
    return model_card(run.name, task.name, task.level, run.trainer.model_cfg, model.num_parameters(), step,
                      elapsed, evals[-1] if evals else {})


def _from_live(option: ModelOption, run: LiveRun) -> ActiveModel:
    with run.lock:
        job, number = run.job, run.job_number
    version, model = job.latest_model()
    snap = job.snapshot(history_tail=1)
    task = run.trainer.task
    examples = tuple((e.source, e.target) for e in task.valid[:5])
    card = live_card(run, model, snap.step, snap.elapsed, snap.evals)
    return ActiveModel(option, live_cache_key(run, number, version), model, task.src_tokenizer, task.tgt_tokenizer,
                       dict(task.spec), card, ((run.probe, ""), *examples), weights_step=snap.weights_step,
                       weights_time=snap.weights_time)


def live_cache_key(run: LiveRun, job_number: int, version: int) -> str:
    """Decoding results of a live run are cached per weights version (a new job restarts the versions)."""
    return f"{LIVE}:{run.id}:{job_number}:{version}"


def resolve(option: ModelOption) -> ActiveModel:
    """Load the model behind an option; raises CheckpointError for a broken checkpoint."""
    if option.source in (SHIPPED, RUN):
        stamp = checkpoint_stamp(option.path)
        ckpt = load_shared_checkpoint(str(option.path), stamp)
        return _from_checkpoint(option, ckpt, f"{option.source}:{option.path}:{stamp}")
    if option.source == UPLOAD:
        upload = _uploads()[option.id.split(":", 1)[1]]
        return _from_checkpoint(option, upload.checkpoint, f"{UPLOAD}:{upload.id}")
    if option.source == HF:
        from ui.hf_models import resolve_hf  # it builds on this module
        return resolve_hf(option)
    run = run_of(option)
    if run is None:
        raise CheckpointError("the server no longer holds this run; its autosave is listed under Saved run")
    return _from_live(option, run)


def current_model() -> ActiveModel | None:
    """The model the pages use now, or None (no checkpoint at all, or it failed to load: see LOAD_ERROR_KEY)."""
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


def card_lines(card: dict[str, Any]) -> list[str]:
    """The model card as short Markdown lines."""
    if card.get("source") == "huggingface":
        prefix = f" · prefix {card['prefix']!r}" if card.get("prefix") else ""
        return [f"**Hugging Face** {card.get('model_type')} (imported, not trained here){prefix}",
                f"**Size** d_model {card.get('d_model')} · {card.get('n_heads')} heads · "
                f"{card.get('n_encoder_layers')}+{card.get('n_decoder_layers')} layers · "
                f"vocabulary {card.get('tgt_vocab_size'):,}",
                f"**Parameters** {card.get('parameters', 0):,}"]
    metrics = card.get("metrics") or {}
    lines = [f"**Task** {card.get('task')} ({card.get('level')}-level)",
             f"**Size** d_model {card.get('d_model')} · {card.get('n_heads')} heads · "
             f"{card.get('n_encoder_layers')}+{card.get('n_decoder_layers')} layers · d_ff {card.get('d_ff')}",
             f"**Parameters** {card.get('parameters', 0):,}",
             f"**Trained** {card.get('steps', 0):,} steps · {card.get('seconds', 0):,.0f} s"]
    shown = [(label, metrics[key], fmt) for key, label, fmt in (
        ("exact_match", "exact match", "{:.0%}"), ("token_accuracy", "token acc.", "{:.1%}"),
        ("loss", "val. loss", "{:.3f}"), ("bleu", "BLEU", "{:.1f}"), ("chrf", "chrF", "{:.1f}"))
        if isinstance(metrics.get(key), (int, float))]
    if shown:
        lines.append("**Metrics** " + " · ".join(f"{label} {fmt.format(value)}" for label, value, fmt in shown))
    if isinstance(metrics.get("bleu_signature"), str):
        lines.append(f"**BLEU signature** `{metrics['bleu_signature']}`")
    if card.get("weights", "last") != "last":
        lines.append(f"**Weights** {card['weights']}")
    return lines
