"""Train a dictionary from the app (docs/dictionaries.md): a form (site, features, k, steps) whose job reads the
model's own activations over its texts and trains a top-k dictionary in the background, with progress, Cancel and
the result saved as a SAELens folder under the runs folder's `dictionaries/` (Cancel keeps what was trained, its
report saying where it stopped). The form lives on the Features page; beside the model's card (the sidebar) an entry
opens it there with the model's default site, and shows the job's progress, Cancel and the saved folder on the
other pages."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import streamlit as st

from transformer.analysis import Cancelled
from transformer.dictionaries import (
    DictionaryError,
    Report,
    Site,
    TrainSettings,
    TrainStep,
    place,
    save_dictionary,
    site_activations,
    train_dictionary,
)
from ui.models import ActiveModel
from ui.server import is_audience, refuse, speaker_only

from ..kit import (
    TRAIN_TEXTS,
    JobTexts,
    analysis_result,
    can_start,
    current_job,
    model_texts,
    start_button,
    trained_root,
)

KEY = "dictionary_train"
OPEN_KEY = f"{KEY}_open"  # the Features page's expander holding the form (opened by the card's entry)
FEATURES_PAGE = "pages/dictionary.py"
JOB = "dictionary-train"  # the first item of a training job's identity
READING = 0.3  # the share of the bar reading the activations takes


def _folder_name(model: str, site: Site, features: int) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{Path(model).name}-{site.label}-{features}").strip("-")


def _default_site(active: ActiveModel) -> str:
    """The stream a model's last layer's heads read (where the feature view looks first)."""
    counts = active.adapter.head_counts()
    kind = active.family.decoder_kind or active.family.encoder_kind or next(iter(counts))
    layer = counts[kind][0]
    return f"resid:dec:L{layer}" if active.family.has_cross else f"resid:L{layer}"


Job = Callable[[Callable[[float], None]], tuple]


def _job(active: ActiveModel, site: Site, settings: TrainSettings, n_texts: int) -> Job:
    """The background job: read the activations, train (Cancel stops the loop and keeps the result), save."""
    adapter = active.adapter

    def run(progress: Callable[[float], None]) -> tuple[Path, Report]:
        where = place(site, adapter)
        texts = model_texts(active, n_texts)
        if texts is None:
            raise DictionaryError("this model has no texts of its own to train on: train it with the CLI's --corpus")
        acts = site_activations(adapter, where, texts.texts, texts.references,
                                progress=lambda done, total: progress(READING * done / total))
        stopped = []

        def on_step(step: TrainStep) -> None:
            try:
                progress(READING + (1 - READING) * step.step / step.steps)
            except Cancelled:
                stopped.append(step.step)

        dictionary, report = train_dictionary(acts.values, site, settings, adapter.name, on_step=on_step,
                                              cancel=lambda: bool(stopped), report_every=20)
        out = save_dictionary(dictionary, trained_root() / _folder_name(adapter.name, site, settings.features),
                              {"dataset_path": texts.described, "context_size": None})
        return out, report

    return run


def show_dictionary_training(active: ActiveModel) -> Path | None:
    """The form and its job; the folder of a dictionary it just saved (None otherwise)."""
    if refuse("train"):
        return None
    st.session_state.setdefault(f"{KEY}_site", _default_site(active))
    with st.container():  # two rows: the form sits in a narrow column beside the dictionary picker
        c_site, c_features = st.columns([3, 2])
        site_text = c_site.text_input("Site", key=f"{KEY}_site",
                                      help="resid:L<l> (the stream entering layer l, what its heads read), "
                                      "attn:<kind>:L<l>; an encoder-decoder's resid:enc:L<l>, resid:dec:L<l>, "
                                      "resid:enc:out")
        features = c_features.number_input("Features", 16, 65_536, 512, step=128, key=f"{KEY}_features")
        c_k, c_steps, c_texts = st.columns(3)
        k = c_k.number_input("k", 1, 256, 8, key=f"{KEY}_k", help="Active features a token (top-k)")
        steps = c_steps.number_input("Steps", 50, 50_000, 2000, step=250, key=f"{KEY}_steps")
        n_texts = c_texts.number_input("Texts", 10, 5000, TRAIN_TEXTS, step=100, key=f"{KEY}_texts",
                                       help="How many of the model's own texts its activations are read over")
    try:
        site = Site.parse(site_text)
        settings = TrainSettings(int(features), "topk", int(k), steps=int(steps))
        settings.check()
        place(site, active.adapter)
    except DictionaryError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        return None
    identity = (JOB, active.cache_key, site.label, settings, int(n_texts))
    texts = JobTexts(cancelled="Cancelled before training began: nothing saved.", refusals=(DictionaryError,))
    got = analysis_result(identity, f"Training {settings.features:,} features at {site.label}",
                          _job(active, site, settings, int(n_texts)), key=KEY, texts=texts)
    if got is None:
        if can_start(identity):
            start_button("Train a dictionary", identity, key=KEY, icon=":material/model_training:")
        return None
    folder, report = got
    state = "Cancelled: kept as trained so far" if report.cancelled else "Saved"
    st.success(f"{state} to `{folder}`: {report.line(settings.features)}.", icon=":material/check:")
    return folder


def dictionary_job_running() -> bool:
    """Whether this session trains a dictionary now (the card refreshes while it does)."""
    job = current_job()
    return job is not None and job.identity[0] == JOB and not job.done.is_set()


def _site_for(active: ActiveModel) -> str:
    """The form's site if it is one of this model's, else the model's default site."""
    typed = st.session_state.get(f"{KEY}_site")
    try:
        place(Site.parse(str(typed)), active.adapter)
    except DictionaryError:
        return _default_site(active)
    return str(typed)


@speaker_only
def _open_form(active: ActiveModel) -> None:
    """on_click of the card's entry: the form open on the Features page, a site of this model in it."""
    st.session_state[f"{KEY}_site"] = _site_for(active)
    st.session_state[OPEN_KEY] = True


def _cancel_training() -> None:
    job = current_job()
    if job is not None and job.identity[0] == JOB:
        job.cancel.set()


def show_training_entry(active: ActiveModel, on_features_page: bool) -> None:
    """Beside the model's card: the button that opens the training form on the Features page (this model, its site
    preselected); on another page, while this session trains a dictionary, its progress and Cancel, then where it
    was saved."""
    job = current_job()
    if job is not None and job.identity[0] == JOB and not on_features_page:
        if not job.done.is_set():
            st.progress(job.fraction, text=f"{job.name}: {job.fraction:.0%}")
            st.button("Cancel", key="sidebar_dictionary_cancel", on_click=_cancel_training, icon=":material/stop:",
                      width="stretch")
            return
        if job.error is None and job.result is not None:
            folder, report = job.result
            st.caption(f"Dictionary {'cancelled, kept' if report.cancelled else 'saved'}: `{folder.name}`.")
        elif job.error is not None:
            st.caption("The dictionary's training ended without a result (the Features page says why).")
    if is_audience():  # the speaker's: an audience session is not offered it (the form says why)
        return
    if st.button("Train a dictionary on this model", key="sidebar_dictionary_train", icon=":material/category:",
                 width="stretch", on_click=_open_form, args=(active,), help="Sparse dictionary features "
                 "(docs/dictionaries.md): the form on the Features page, this model and its default site picked."):
        st.switch_page(FEATURES_PAGE, query_params={"model": active.option.id})
