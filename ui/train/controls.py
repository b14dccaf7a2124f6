"""The Train page's buttons (Train, Stop, Resume, Save as…, Continue a checkpoint) and their messages."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import streamlit as st

from transformer.data import DataError, TokenizerError
from transformer.decode import InputError
from transformer.model import ConfigError
from transformer.store import Checkpoint, CheckpointError, load_checkpoint
from transformer.train import fork_server
from ui.models import HF, LIVE, SHIPPED, UPLOAD, ModelOption, selected_option, uploaded_checkpoint
from ui.server import LIMITS, is_audience, refusal, speaker_only

from .actions import (
    BusyError,
    change_probe,
    continue_checkpoint,
    resume_run,
    resume_target,
    run_budget,
    save_run,
    start_run,
)
from .form import PROBES, build_plan, remember_form
from .live_run import live_run

MESSAGE_KEY = "train_message"
RESUME_SECONDS_KEY = "train_resume_seconds"
USER_ERRORS = (ConfigError, DataError, TokenizerError, CheckpointError, BusyError, InputError)


@st.cache_resource(show_spinner=False)
def warm_up_training() -> bool:
    """Once per server, when the Train page is first opened: start the training fork server in the background
    (it imports torch, a few seconds), so pressing Train starts training at once."""
    threading.Thread(target=fork_server.warm_up, name="attention-studio-job-server", daemon=True).start()
    return True


def _say(kind: str, text: str) -> None:
    st.session_state[MESSAGE_KEY] = (kind, text)


def _report(failure: str, action: Callable[[], Any], success: Callable[[Any], str] | None = None) -> None:
    """Run a button's action; a user error shows as "<failure>: <why>", else `success(result)` if given."""
    try:
        result = action()
    except USER_ERRORS as exc:
        _say("error", f"{failure}: {exc}")
    else:
        if success is not None:
            _say("success", success(result))


def show_message() -> None:
    """The outcome of the last button press, once."""
    message = st.session_state.pop(MESSAGE_KEY, None)
    if message is not None:
        kind, text = message
        {"error": st.error, "success": st.success, "info": st.info}[kind](text)


@speaker_only
def start() -> None:
    """Train callback: the form's job plan, started as a background job."""
    remember_form()

    def action() -> Any:
        return start_run(build_plan()).plan.task

    _report("Training did not start", action,
            lambda task: f"Training started on {task.name} ({len(task.train):,} training examples). The sidebar now "
                         "shows the live model; the other pages use its newest weights.")


@speaker_only
def stop() -> None:
    """Stop callback: the worker ends after its current step."""
    run = live_run()
    if run is not None:
        run.job.stop()
        _say("info", "Stopping… Resume continues from here; Save as… keeps the run.")


@speaker_only
def resume() -> None:
    """Resume callback: the same model, optimizer and schedule, trained further."""
    run = live_run()
    if run is None:
        return
    _report("Cannot resume", lambda: resume_run(run, int(st.session_state.get("train_more_steps", 500)),
                                                 float(st.session_state.get(RESUME_SECONDS_KEY) or run_budget(run))))


@speaker_only
def save() -> None:
    """Save as… callback."""
    run = live_run()
    name = st.session_state.get("train_save_name", "")
    if run is None:
        return
    _report("Not saved", lambda: save_run(run, name, overwrite=bool(st.session_state.get("train_save_overwrite"))),
            lambda path: f"Saved as “{path.name}”. Pick it in the sidebar under Saved run, or download it there.")


@speaker_only
def apply_probe() -> None:
    """Callback: record the edited probe sentence from the next snapshot on."""
    run = live_run()
    if run is None:
        return
    _report("Probe not changed", lambda: change_probe(run, st.session_state.get("train_probe_live", "")),
            lambda _: f"Recording the probe “{run.probe}” from now on.")


def probe_editor() -> None:
    """Edit the probe sentence of the run (takes effect at the next recorded step)."""
    run = live_run()
    if run is None:
        return
    if st.session_state.get("train_probe_live_for") != run.id or "train_probe_live" not in st.session_state:
        st.session_state["train_probe_live_for"] = run.id
        st.session_state["train_probe_live"] = run.probe
    c_text, c_apply = st.columns([5, 1], vertical_alignment="bottom")
    c_text.text_input("Probe sentence", key="train_probe_live",
                      help="Decoded every few steps with the newest weights; its attention is recorded below.")
    locked = is_audience()
    c_apply.button("Use this probe", key="train_probe_apply", on_click=apply_probe, width="stretch", disabled=locked,
                   help=refusal("train") if locked else None)


def _checkpoint_for(option: ModelOption) -> Checkpoint:
    """A private copy of a checkpoint with its optimizer state (never the shared, cached one)."""
    if option.source == UPLOAD:
        return uploaded_checkpoint(option)
    if option.path is None:
        raise CheckpointError(f"{option.name} names no folder")
    return load_checkpoint(option.path, load_optimizer=True)


@speaker_only
def continue_training(option: ModelOption) -> None:
    """Continue callback: resume training the checkpoint picked in the sidebar."""
    state = st.session_state

    def action() -> Checkpoint:
        ckpt = _checkpoint_for(option)
        task_name = ckpt.task_spec.get("name", "")
        probe = state.get("train_probe", "").strip() if state.get("train_task") == task_name else ""
        examples = ckpt.metrics.get("examples") or [{}]
        probe = probe or examples[0].get("source") or PROBES.get(task_name, "")
        continue_checkpoint(ckpt, more_steps=int(state.get("train_more_steps", 500)),
                            max_seconds=float(state["train_max_seconds"]), probe=probe,
                            probe_every=int(state["train_probe_every"]), uploaded=option.source == UPLOAD)
        return ckpt

    _report(f"Cannot continue {option.name}", action, lambda ckpt: f"Continuing {option.name} from step {ckpt.step:,}.")


def run_controls() -> None:
    """Stop / Resume / Save as… for this session's run, and Continue for a picked checkpoint."""
    run = live_run()
    option = selected_option()
    active = run is not None and run.active
    locked = is_audience()  # an audience session sees the controls, switched off, with the reason as their help
    why = refusal("train") if locked else None
    st.session_state.setdefault("train_more_steps", 500)
    state = st.session_state  # the box is gone after a visit to another page: back to the run's budget
    if run is not None and (RESUME_SECONDS_KEY not in state or state.get(RESUME_SECONDS_KEY + "_for") != run.id):
        st.session_state[RESUME_SECONDS_KEY + "_for"] = run.id
        st.session_state[RESUME_SECONDS_KEY] = run_budget(run)
    with st.container(border=True):
        # two rows: seven controls in one cut their labels short at a 1280-px window
        c_stop, c_resume, c_more, c_secs = st.columns([1.2, 3, 1.5, 1.5], vertical_alignment="bottom")
        c_stop.button("Stop", key="train_stop", icon=":material/stop:", on_click=stop, disabled=not active or locked,
                      width="stretch", help=why)
        resume_label = "Resume"
        if run is not None and not active:
            resume_label = (f"Resume to {resume_target(run, int(st.session_state['train_more_steps'])):,} · "
                            f"{st.session_state.get(RESUME_SECONDS_KEY) or run.max_seconds:,.0f} s")
        c_resume.button(resume_label, key="train_resume", icon=":material/resume:", on_click=resume,
                        disabled=run is None or active or locked, width="stretch", help=why)
        c_more.number_input("More steps", min_value=1, max_value=LIMITS.max_steps, step=100, key="train_more_steps",
                            help="How far Resume and Continue train past a finished budget.")
        c_secs.number_input("Seconds", min_value=1.0, max_value=LIMITS.max_seconds, step=5.0, key=RESUME_SECONDS_KEY,
                            disabled=run is None,
                            help="Resume's time budget: a new one, counted from the moment Resume is pressed. "
                                 "Whichever budget (steps or seconds) runs out first ends the run.")
        c_name, c_over, c_save = st.columns([4, 1.5, 1.5], vertical_alignment="bottom")
        c_name.text_input("Save as…", key="train_save_name", placeholder="run name, e.g. reverse-small",
                          disabled=run is None or locked)
        c_over.checkbox("Overwrite", key="train_save_overwrite", disabled=run is None or locked)
        c_save.button("Save", key="train_save", icon=":material/save:", on_click=save,
                      disabled=run is None or active or locked, width="stretch", help=why)
        if option is not None and option.source not in (LIVE, HF) and not active and not locked:  # imported: not here
            st.button(f"Continue training “{option.name}” (the model picked in the sidebar)", key="train_continue",
                      icon=":material/fast_forward:", on_click=continue_training, args=(option,),
                      help="Resume its optimizer and schedule; its task is rebuilt from the checkpoint.")
        if run is not None and run.saved_as:
            st.caption(f"This run was saved as “{run.saved_as}”.")
        if option is not None and option.source == SHIPPED and not active and run is None:
            st.caption("Shipped checkpoints are read-only: Continue trains a copy; save it under a new name.")
