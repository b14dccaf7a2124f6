"""Presenter mode as the views see it: whether it is on, and the keyboard keys that step and cycle heads.

The switch itself, its CSS and the link parameter are in ui/links (presenter.py, url_state.py).
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Sequence

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from transformer.decode import MEAN_HEAD

PRESENT_KEY = "studio_present"
NEXT_STEP_KEY, PREV_STEP_KEY = "Right", "Left"
NEXT_HEAD_KEY, PREV_HEAD_KEY = "H", "Shift+H"
SWITCH_KEY = "P"


def presenting() -> bool:
    """Whether presenter mode is on in this session."""
    return bool(st.session_state.get(PRESENT_KEY, False))


def _cycle(key: str, options: Sequence[int], delta: int) -> None:
    current = st.session_state.get(key)
    i = list(options).index(current) if isinstance(current, int) and current in options else 0
    st.session_state[key] = options[(i + delta) % len(options)]


def head_keys(key: str, n_heads: int) -> None:
    """In presenter mode, Next / Prev head buttons (keys H and Shift+H) that cycle the head picker `key`."""
    if not presenting() or n_heads < 2:
        return
    options = [MEAN_HEAD, *range(n_heads)]
    slot = _slot.get()
    prev_col, next_col = (slot if slot is not None else st).container(key=f"{key}_keys").columns(2)
    prev_col.button("Head", key=f"{key}_prev", icon=":material/chevron_left:", on_click=_cycle,
                    args=(key, list(options), -1), shortcut=PREV_HEAD_KEY, type="tertiary")
    next_col.button("Head", key=f"{key}_next", icon=":material/chevron_right:", on_click=_cycle,
                    args=(key, list(options), 1), shortcut=NEXT_HEAD_KEY, type="tertiary")


_slot: ContextVar[DeltaGenerator | None] = ContextVar("folded_keys_slot", default=None)  # per script run's thread


@contextmanager
def folded_controls(label: str, key: str, *, keys: bool = False) -> Iterator[None]:
    """In presenter mode, a page's controls drawn inside a collapsed expander `label` (so its main picture is on the
    first screen), the head keys (`keys`) kept outside it, visible; otherwise the controls as they are."""
    if not presenting():
        yield
        return
    token = _slot.set(st.container(horizontal=True, key=f"{key}_keys_row") if keys else None)
    try:
        with st.expander(label, expanded=False, icon=":material/tune:", key=key):
            yield
    finally:
        _slot.reset(token)
