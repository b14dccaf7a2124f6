"""A text box whose text the model reads: text longer than the limit (a paste) keeps its first characters and the box
says so, where Streamlit's own `max_chars` would drop the whole paste without a word."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from transformer.decode import MAX_INPUT_CHARS, fit_input

_NOTE = "{key}__cut"  # session state: (the text kept, the message) while the box holds that text


def _cut(key: str, limit: int, then: Callable[..., None] | None, args: tuple) -> Callable[[], None]:
    def on_change() -> None:
        kept, note = fit_input(st.session_state.get(key) or "", limit)
        if note is not None:
            st.session_state[key] = kept
            st.session_state[_NOTE.format(key=key)] = (kept, note)
        if then is not None:
            then(*args)
    return on_change


def model_text_input(where: Any, label: str, *, key: str, limit: int = MAX_INPUT_CHARS,
                     on_change: Callable[..., None] | None = None, args: tuple = (), multiline: bool = False,
                     **kwargs: Any) -> str:
    """`where.text_input` (where: st or a column; `multiline`: `text_area`, line breaks kept) for text a model reads,
    at most `limit` characters: a longer text keeps its first `limit` and a note under the box says so while the box
    holds it."""
    box = where.text_area if multiline else where.text_input
    text = box(label, key=key, on_change=_cut(key, limit, on_change, args), **kwargs)
    kept, note = fit_input(text or "", limit)  # set by a link or by code, not typed: cut here too
    note_key = _NOTE.format(key=key)
    if note is not None:
        st.session_state[note_key] = (kept, note)
    shown = st.session_state.get(note_key)
    if shown is not None and shown[0] == kept:
        where.info(shown[1], icon=":material/content_cut:")
    elif shown is not None:
        del st.session_state[note_key]
    return kept
