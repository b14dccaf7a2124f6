"""The sidebar every page shares: model picker, model card (with the entry that trains a dictionary on the model),
bundle upload/download, training status."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable

import streamlit as st

from transformer.store import MAX_BUNDLE_BYTES, Checkpoint, CheckpointError, bundle_bytes, save_checkpoint
from ui.models import (
    LOAD_ERROR_KEY,
    MODEL_KEY,
    RUN,
    SHIPPED,
    UPLOAD,
    ActiveModel,
    add_upload,
    card_help,
    card_lines,
    current_model,
    hf_loader,
    model_options,
    run_of,
    select_model,
    selected_option,
    uploaded_bundle,
)
from ui.server import refuse, speaker_only
from ui.train import live_checkpoint, live_run, run_just_ended
from ui.views import dictionary_job_running, md, show_training_entry

UPLOAD_KEY = "sidebar_upload"
UPLOAD_MESSAGE_KEY = "sidebar_upload_message"
DICTIONARY_PAGE = "dictionary"
DICTIONARY_RUNNING_KEY = "sidebar_dictionary_running"


@speaker_only
def _on_upload() -> None:
    """Load a newly uploaded bundle into this session and select it; a bad file becomes a message."""
    uploaded = st.session_state.get(UPLOAD_KEY)
    if uploaded is None:
        return
    data = uploaded.getvalue()
    if len(data) > MAX_BUNDLE_BYTES:
        st.session_state[UPLOAD_MESSAGE_KEY] = ("error", f"{uploaded.name} is {len(data) / 2**20:.1f} MiB; "
                                                f"a bundle may be at most {MAX_BUNDLE_BYTES / 2**20:.0f} MiB.")
        return
    try:
        upload = add_upload(uploaded.name, data)
    except CheckpointError as exc:
        st.session_state[UPLOAD_MESSAGE_KEY] = ("error", f"{uploaded.name} is not a usable checkpoint bundle: {exc}")
        return
    select_model(f"{UPLOAD}:{upload.id}")
    st.session_state[UPLOAD_MESSAGE_KEY] = ("success", f"Loaded {upload.name} (this session only).")


def checkpoint_zip(ckpt: Checkpoint) -> bytes:
    """Save a checkpoint that has no directory yet into a temporary one and zip it."""
    folder = Path(tempfile.mkdtemp(prefix="attention-studio-bundle-"))
    try:
        return bundle_bytes(save_checkpoint(ckpt, folder / "model"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bundle_source(active: ActiveModel) -> Callable[[], bytes] | bytes | None:
    """The current model as a .zip bundle (made when the download is clicked), or None."""
    option = active.option
    if option.source in (SHIPPED, RUN) and option.path is not None:
        path = option.path
        return lambda: bundle_bytes(path)
    if option.source == UPLOAD:
        return uploaded_bundle(option)
    run = run_of(option)
    if run is not None:
        return lambda: checkpoint_zip(live_checkpoint(run))
    return None


def _model_card(active: ActiveModel, page: str) -> None:
    with st.container(border=True):
        option = active.option
        named = [f"**Model** {md(option.name)}"] if option.short_label != option.label else []  # the picker cut it
        st.markdown("  \n".join(named + card_lines(active.card, active.adapter)), help=card_help(active.card))
        data = bundle_source(active)
        if data is not None:
            name = active.option.name.replace(" ", "_")
            st.download_button("Download model (.zip)", data=data, file_name=f"{name}.zip", mime="application/zip",
                               key="sidebar_download", icon=":material/download:", on_click="ignore", width="stretch")
        show_training_entry(active, on_features_page=page == DICTIONARY_PAGE)


def _training_status() -> None:
    """'Training: step N' on every page."""
    run = live_run()
    if run is None:
        return
    snap = run.job.snapshot(history_tail=1)
    if snap.active:
        if snap.status == "waiting":
            st.warning("Training: waiting for a free training slot…", icon=":material/hourglass_top:")
        else:
            st.info(f"Training: step {snap.step:,} / {snap.target_steps:,}", icon=":material/model_training:")
        run_just_ended(True)
        return
    st.caption(f"Last run: {snap.status} at step {snap.step:,}.")
    if run_just_ended(False):
        st.rerun(scope="app")  # the run ended: refresh buttons and cards on the page


def _picker() -> None:
    options = model_options()
    selected = selected_option()
    if selected is not None and st.session_state.get(MODEL_KEY) != selected.id:
        st.session_state[MODEL_KEY] = selected.id  # the stored pick is gone (or there was none): the default
    labels = {o.id: o.short_label for o in options}
    st.selectbox("Model", list(labels), format_func=labels.__getitem__, key=MODEL_KEY,
                 help="Shipped checkpoints, saved and autosaved runs, your uploads, the runs training on this "
                 "server and Hugging Face models (folders in the models directory, or loaded by name below).")


def _dictionary_ended() -> bool:
    """Whether the session's dictionary training ended since the card last looked (the page then reruns whole)."""
    running = dictionary_job_running()
    was = st.session_state.get(DICTIONARY_RUNNING_KEY, False)
    st.session_state[DICTIONARY_RUNNING_KEY] = running
    return was and not running


def _card_and_status(page: str) -> None:
    """The current model's card and the training status (refreshed every second while a run trains, or elsewhere
    than the Features page while a dictionary trains)."""
    active = current_model()
    if active is not None:
        _model_card(active, page)
    elif st.session_state.get(LOAD_ERROR_KEY):
        st.error(st.session_state[LOAD_ERROR_KEY], icon=":material/error:")
    else:
        st.info("No checkpoints found. Upload a bundle or train a model.", icon=":material/info:")
    _training_status()
    if _dictionary_ended() and page != DICTIONARY_PAGE:
        st.rerun(scope="app")  # stop refreshing the card


def render_sidebar(refresh_every: float = 1.0, page: str = "") -> None:
    """Draw the shared sidebar; while a run trains, its card and status refresh every `refresh_every` seconds.

    Every fragment run costs the browser a redraw of the page's state whatever it shows (measured with the Train
    page open: the sidebar's refresh alone took ~0.2 of the browser's cores), so a page that shows the run
    itself (Train) refreshes the sidebar less often.
    """
    with st.sidebar:
        _picker()
        training = (run := live_run()) is not None and run.active
        training = training or dictionary_job_running() and page != DICTIONARY_PAGE
        st.fragment(run_every=refresh_every if training else None)(_card_and_status)(page)
        hf_loader(current_model())  # its chat switch shows for a causal model with a chat template
        with st.expander("Upload a checkpoint bundle", icon=":material/upload:"):
            if not refuse("upload"):
                st.file_uploader("Checkpoint bundle (.zip)", type=["zip"], key=UPLOAD_KEY, on_change=_on_upload,
                                 help="A .zip of a checkpoint directory (safetensors weights, JSON config).")
        message = st.session_state.pop(UPLOAD_MESSAGE_KEY, None)
        if message is not None:
            kind, text = message
            (st.error if kind == "error" else st.success)(text)
