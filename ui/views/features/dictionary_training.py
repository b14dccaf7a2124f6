"""Train a dictionary from the app (docs/dictionaries.md): a form (site, features, k, steps) whose job reads the
model's own activations over its texts and trains a top-k dictionary in the background, with progress, Cancel and
the result saved as a SAELens folder under the runs folder's `dictionaries/` (Cancel keeps what was trained, its
report saying where it stopped)."""
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
from ui.server import refuse

from ..kit import TRAIN_TEXTS, JobTexts, analysis_result, can_start, model_texts, start_button, trained_root

KEY = "dictionary_train"
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
    with st.container():
        c_site, c_features, c_k, c_steps, c_texts = st.columns([2, 1, 1, 1, 1])
        site_text = c_site.text_input("Site", key=f"{KEY}_site",
                                      help="resid:L<l> (the stream entering layer l, what its heads read), "
                                      "attn:<kind>:L<l>; an encoder-decoder's resid:enc:L<l>, resid:dec:L<l>, "
                                      "resid:enc:out")
        features = c_features.number_input("Features", 16, 65_536, 512, step=128, key=f"{KEY}_features")
        k = c_k.number_input("k (active a token)", 1, 256, 8, key=f"{KEY}_k")
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
    identity = ("dictionary-train", active.cache_key, site.label, settings, int(n_texts))
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
