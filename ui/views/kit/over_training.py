"""The corpus statistics over a run's weight snapshots, handed from the corpus statistics (which compute them) to the
head finder (whose slider over training reads them): two features, so the hand-off lives in the kit, its key
behind these two functions."""
from __future__ import annotations

from typing import Any

import streamlit as st

from ui.models import ActiveModel

SNAPSHOTS_KEY = "corpus_snapshots_latest"  # (model cache key, snapshot curves)


def keep_snapshot_curves(active: ActiveModel, curves: dict[str, Any]) -> None:
    """Keep the statistics over training just computed for this model (the finder's slider reads them)."""
    st.session_state[SNAPSHOTS_KEY] = (active.cache_key, curves)


def latest_snapshot_curves(active: ActiveModel) -> dict[str, Any] | None:
    """The statistics over the run's weight snapshots last computed in this session for this model; None before."""
    latest = st.session_state.get(SNAPSHOTS_KEY)
    return latest[1] if latest is not None and latest[0] == active.cache_key else None
