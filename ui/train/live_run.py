"""The training run a browser session watches: one of the server's runs (`transformer.train.server_runs`).

Runs belong to the server, not to the tab: a session attaches to one (by starting it, or from the list of the
server's runs after a reload or in another tab) and detaches by starting or picking another.
"""
from __future__ import annotations

import streamlit as st

from transformer.train import LiveRun, server_runs

LIVE_RUN_KEY = "train_live_run"
WAS_TRAINING_KEY = "live_run_was_training"

__all__ = ["LIVE_RUN_KEY", "live_run", "run_just_ended", "set_live_run"]


def live_run() -> LiveRun | None:
    """The run this session watches, if any."""
    return st.session_state.get(LIVE_RUN_KEY)


def set_live_run(run: LiveRun | None) -> None:
    """Watch `run` in this session (None: watch none); the server keeps the run either way."""
    if run is not None:
        server_runs.add(run)
    st.session_state[LIVE_RUN_KEY] = run
    st.session_state.pop(WAS_TRAINING_KEY, None)


def run_just_ended(active: bool) -> bool:
    """Called by every live refresh with the run's state: True once, at the first refresh after it stopped
    training, when the whole page must rerun (buttons, cards and forms change)."""
    if active:
        st.session_state[WAS_TRAINING_KEY] = True
        return False
    return bool(st.session_state.pop(WAS_TRAINING_KEY, False))
