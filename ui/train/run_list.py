"""The Train page's list of the server's runs: after a reload or in another tab, watch (attach to) one of them."""
from __future__ import annotations

import time

import streamlit as st

from transformer.train import LiveRun, server_runs
from ui.models import live_option_id, select_model

from .live_run import live_run, set_live_run

WATCH_KEY_PREFIX = "train_watch_"
_STATES = {"waiting": "waiting for a slot", "running": "training", "finished": "finished", "stopped": "stopped",
           "failed": "failed"}


def watch(run: LiveRun) -> None:
    """Callback: this session watches `run` (progress, curves, Stop, Resume, Save) and decodes with it."""
    set_live_run(run)
    select_model(live_option_id(run))


def describe(run: LiveRun, now: float | None = None) -> str:
    """One line about a run: name, state, step, age and where it was autosaved."""
    snap = run.job.snapshot(history_tail=1)
    minutes = max((now or time.time()) - run.started_at, 0.0) / 60
    line = (f"**{run.name}** · {_STATES.get(snap.status, snap.status)} · step {snap.step:,} of "
            f"{snap.target_steps:,} · started {minutes:.0f} min ago")
    if run.saved_as:
        line += f" · saved as “{run.saved_as}”"
    elif run.autosaved_as:
        line += f" · autosaved as “{run.autosaved_as}”"
    return line


def server_runs_panel() -> None:
    """The other runs of this server, each with a Watch button; nothing when there are none."""
    watched = live_run()
    others = [r for r in server_runs.runs() if r is not watched]
    if not others:
        return
    training = sum(r.active for r in others)
    title = (f"Runs on this server ({training} training)" if training else "Recent runs on this server")
    with st.expander(title, expanded=watched is None and training > 0, icon=":material/dns:"):
        st.caption("Runs belong to the server, not to a browser tab: they train to their budget even when nobody "
                   "watches, and are then autosaved (listed under Saved run). Watch one to see its progress, "
                   "stop, resume or save it; several tabs may watch the same run.")
        for run in others:
            c_text, c_button = st.columns([5, 1], vertical_alignment="center")
            c_text.markdown(describe(run))
            c_button.button("Watch", key=f"{WATCH_KEY_PREFIX}{run.id}", on_click=watch, args=(run,),
                            icon=":material/visibility:", width="stretch")
