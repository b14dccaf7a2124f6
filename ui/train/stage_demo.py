"""The Train page's stage demo: a switch that fills the form with the task's stage recipe (transformer.model's
STAGE_RECIPES) and makes the run stop as soon as its attention picture is clean."""
from __future__ import annotations

import streamlit as st

from transformer.model import STAGE_RECIPES, CleanRule

STAGE_KEY = "train_stage"


def stage_available(task: str) -> bool:
    """True when the task has a stage recipe (reverse, toy-en-de)."""
    return task in STAGE_RECIPES


def stage_on() -> bool:
    """True when the switch is on and the picked task has a stage recipe."""
    state = st.session_state
    return bool(state.get(STAGE_KEY)) and stage_available(state.get("train_task", ""))


def stage_rule() -> CleanRule | None:
    """The stopping rule of the picked task's stage demo while the switch is on; else None."""
    return STAGE_RECIPES[st.session_state["train_task"]].rule if stage_on() else None


def stage_help(task: str) -> str:
    """What the switch does, for its tooltip."""
    if not stage_available(task):
        return f"The stage demo is for {' and '.join(STAGE_RECIPES)}."
    return (f"A recipe for a live demo: {STAGE_RECIPES[task].summary}. It fills the settings; each can still be "
            "changed under Every hyperparameter.")


def stage_caption() -> None:
    """One line under the task row while the stage demo is on: what will happen when Train is pressed."""
    rule = stage_rule()
    if rule is None:  # the switch is off
        return
    goal = (f"exact match ≥ {rule.min_exact_match:g} and " if rule.min_exact_match > 0 else "") + \
        f"one cross-attention head ≥ {rule.min_alignment:g} aligned with the gold alignment"
    st.caption(f"Stage demo: trains until the picture is clean ({goal}, checked every {rule.check_every} steps "
               f"once the training batches are nearly all right), at most {rule.max_seconds:,.0f} s; then it stops "
               "and says so.")
