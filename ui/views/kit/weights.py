"""Which weights a view shows ("weights of step 378 · 9 s ago"), and following a live run's newest weights."""
from __future__ import annotations

import time

import streamlit as st

from ui.models import LIVE, ActiveModel, live_cache_key, run_of

from .widgets import SlideTitle

FOLLOW_EVERY_S = 3.0  # while a picked run trains, its views check this often for newer weights
DRAWN_AT_KEY = "weights_drawn_at"


def _ago(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def weights_label(active: ActiveModel, now: float | None = None) -> str:
    """One line naming the model and the training step of the weights the view shows."""
    if active.weights_step is None:  # e.g. a pretrained Hugging Face model: no training step of ours
        return f"Weights of {active.option.label}"
    step = f"step {active.weights_step:,}"
    if active.option.source != LIVE:
        return f"Weights of {step} · {active.option.label}"
    ago = "" if active.weights_time is None else f" · {_ago((now or time.time()) - active.weights_time)}"
    run = run_of(active.option)
    state = "training: this view follows its newest weights" if run is not None and run.active else "not training"
    return f"Weights of {step}{ago} · {active.option.name} ({state})"


def weights_of(active: ActiveModel) -> str:
    """The weights in a few words for a file made from the view ("Weights of step 6,684"; "" for a model not
    trained here)."""
    return "" if active.weights_step is None else f"Weights of step {active.weights_step:,}"


def model_caption(tag: str, active: ActiveModel) -> str:
    """Which model, which weights: '**A** · reverse · Shipped · 3,000 steps' ('imported' for Hugging Face)."""
    if active.card.get("source") == "huggingface":
        return f"**{tag}** · {active.option.label} · imported, not trained here"
    return f"**{tag}** · {active.option.label} · {int(active.card.get('steps', 0)):,} steps"


def slide_title(active: ActiveModel, text: str, reference: str | None = None) -> SlideTitle:
    """What a slide of this view names: the model and its weights, the input (and the reference fed, if any)."""
    weights = weights_of(active)
    label = active.option.label.replace("  ·  ", " · ")
    return SlideTitle(label + (f" · {weights.lower()}" if weights else ""), text, reference)


def _newest_key(active: ActiveModel) -> str | None:
    run = run_of(active.option)
    if run is None:
        return None
    with run.lock:
        job, number = run.job, run.job_number
    return live_cache_key(run, number, job.snapshot(history_tail=1).weights_version)


def _label_and_follow(active: ActiveModel, following: bool) -> None:
    """The label; while following a training run, rerun the page as soon as newer weights are published (the
    page keeps its step, layer and head: they live in session state)."""
    drawn_at = st.session_state.get(DRAWN_AT_KEY, 0.0)
    if following and time.monotonic() - drawn_at >= 0.9 * FOLLOW_EVERY_S:  # not in the page's own run
        run = run_of(active.option)
        newest = _newest_key(active)
        if newest != active.cache_key or run is None or not run.active:  # newer weights, or it ended
            st.rerun(scope="app")
    st.caption(weights_label(active), help="Results are computed from exactly these weights. A live run's views "
               "refresh on their own while it trains.")


def show_weights(active: ActiveModel) -> None:
    """Say which weights the page shows; for a training run, refresh the page whenever its weights change."""
    run = run_of(active.option)
    following = run is not None and run.active
    st.session_state[DRAWN_AT_KEY] = time.monotonic()
    st.fragment(run_every=FOLLOW_EVERY_S if following else None)(_label_and_follow)(active, following)
