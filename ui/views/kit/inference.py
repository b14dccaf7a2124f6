"""Decoding for the pages: cached per (model weights, text, options); user mistakes become messages."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import streamlit as st

from transformer.analysis import gold_cells as alignment_gold_cells
from transformer.data import GoldSource, known_alignment, known_output
from transformer.decode import (
    STORE_ABOVE,
    DecodeResult,
    InputError,
    can_batch,
    greedy_decode,
    keeps_store,
    masked_decode,
    queued_greedy,
    teacher_forced,
)
from ui.models import ActiveModel
from ui.server import shared

from .vocabulary_hint import show_vocabulary_hint
from .widgets import md_token

TEXT_KEY = "studio_text"
TEXT_TASK_KEY = "studio_text_task"
REFERENCE_KEY = "studio_reference"
REFERENCE_FOR_KEY = "studio_reference_for"
FALLBACK_TEXT = {"char": "attentionisall", "word": "the man sees the dog"}


def check_not_document(active: ActiveModel, text: str) -> None:
    """A prompt whose decode keeps the attention store (`keeps_store`: a decoder-only prompt past STORE_ABOVE tokens)
    is a document: its maps would be n × n, so this decode refuses it and points to the Decode and Attention pages,
    whose own input decodes a document as a background job with the attention store."""
    adapter = active.adapter
    if not adapter.family.prompt_in_decoder:
        return
    n = len(adapter.decoder_prefix(adapter.tokenize_source(text)))
    if keeps_store(adapter, n):
        raise InputError(f"The input has {n:,} tokens: above {STORE_ABOVE:,} a decoder-only prompt is read as a "
                         "document. Open it on the Decode or Attention page: their input decodes a document with the "
                         "attention store as a background job, after an estimate of its time and memory.")


@shared
def _greedy(model_key: str, _active: ActiveModel, text: str, top_k: int, forced: tuple[str, ...]) -> DecodeResult:
    check_not_document(_active, text)
    if not _active.adapter.family.decodes:  # encoder-only: the predictions at the masks, one forward pass
        return masked_decode(_active.adapter, text, top_k=top_k)
    if not forced:  # a plain decode: stepped in one batch with other sessions' (transformer.decode.DecodeQueue)
        return queued_greedy(_active.adapter, text, top_k=top_k)
    return greedy_decode(_active.adapter, text, top_k=top_k, forced=forced)


@shared
def _teacher(model_key: str, _active: ActiveModel, text: str, reference: str, top_k: int) -> DecodeResult:
    if not _active.adapter.family.decodes:
        raise InputError(f"{_active.option.name} is an encoder-only model: it has no decoder to feed a reference.")
    check_not_document(_active, text)
    return teacher_forced(_active.adapter, text, reference, top_k=top_k)


def decoding_message(active: ActiveModel) -> str:
    """What the spinner says while a decode that is not cached yet runs (shown after half a second)."""
    return f"Decoding with {active.option.name}…"


def greedy(active: ActiveModel, text: str, *, top_k: int = 5, forced: Sequence[str] = ()) -> DecodeResult:
    """Greedy decoding (eval mode, KV cache); raises InputError for text the model cannot read."""
    with st.spinner(decoding_message(active), show_time=True):
        return _greedy(active.cache_key, active, text, int(top_k), tuple(forced))


def greedy_pair(active: ActiveModel, text_a: str, text_b: str, *, top_k: int = 5) -> tuple[DecodeResult, DecodeResult]:
    """Two greedy decodes asked for at once (Compare's edit mode), so the decode queue steps them as one batch rather
    than one after the other; each is cached as `greedy` caches it. Raises the first InputError."""
    key, k = active.cache_key, int(top_k)
    with st.spinner(decoding_message(active), show_time=True):
        if not can_batch(active.adapter):
            return _greedy(key, active, text_a, k, ()), _greedy(key, active, text_b, k, ())
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="studio-decode-pair") as pool:
            other = pool.submit(_greedy, key, active, text_b, k, ())
            return _greedy(key, active, text_a, k, ()), other.result()  # A's error first; B's decode is waited for


def read_ahead_greedy(active: ActiveModel, text: str, top_k: int = 5) -> bool:
    """Decode into the cache `greedy` reads, outside any session (the server, for a link whose page is on its way);
    False when the model cannot read the text (the page will say why)."""
    try:
        _greedy(active.cache_key, active, text, int(top_k), ())
    except InputError:
        return False
    return True


def teacher(active: ActiveModel, text: str, reference: str, *, top_k: int = 5) -> DecodeResult:
    """Teacher-forced pass on `reference`; raises InputError for text the model cannot read."""
    with st.spinner(decoding_message(active), show_time=True):
        return _teacher(active.cache_key, active, text, reference, int(top_k))


def greedy_or_message(active: ActiveModel, text: str, **options) -> DecodeResult | None:
    """Greedy decoding, or None after showing why the text cannot be decoded; unknown tokens are named."""
    try:
        result = greedy(active, text, **options)
    except InputError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        return None
    if result.unknown_tokens:
        unknown = ", ".join(md_token(tok) for tok in sorted(set(result.unknown_tokens)))
        st.warning(f"Not in the model's vocabulary (read as unknown): {unknown}", icon=":material/help:")
        show_vocabulary_hint(active)
    return result


def default_text(active: ActiveModel) -> str:
    """An input the model's task knows: a validation example (or the probe), else a generic one."""
    for source, _ in active.examples:
        if source.strip():
            return source
    return FALLBACK_TEXT.get(active.level, "hello")


def bind_text(widget_key: str, active: ActiveModel) -> None:
    """Initialise a page's text widget from the input shared by all pages (reset when the task changes)."""
    state = st.session_state
    if state.get(TEXT_TASK_KEY) != active.task_name:
        state[TEXT_TASK_KEY] = active.task_name
        state[TEXT_KEY] = default_text(active)
        state.pop(widget_key, None)
    if widget_key not in state:
        state[widget_key] = state.get(TEXT_KEY, default_text(active))


def share_text(widget_key: str) -> None:
    """on_change callback: a page's text widget becomes the input all pages show."""
    st.session_state[TEXT_KEY] = st.session_state[widget_key]


def reference_for(active: ActiveModel, text: str) -> str:
    """The correct output for `text` when the task knows it (generated tasks, the toy grammar), else an example's."""
    known = known_output(active.task_name, text)
    if known is not None:
        return known
    return next((ref for src, ref in active.examples if src == text and ref), "")


def bind_reference(widget_key: str, active: ActiveModel, text: str) -> None:
    """Initialise a page's reference widget: the known correct output of a newly typed text."""
    state = st.session_state
    if state.get(REFERENCE_FOR_KEY) != (active.task_name, text):
        state[REFERENCE_FOR_KEY] = (active.task_name, text)
        state[REFERENCE_KEY] = reference_for(active, text)
        state.pop(widget_key, None)
    if widget_key not in state:
        state[widget_key] = state.get(REFERENCE_KEY, "")


def share_reference(widget_key: str) -> None:
    """on_change callback: a page's reference widget becomes the reference all pages show."""
    st.session_state[REFERENCE_KEY] = st.session_state[widget_key]


def gold_alignment_for(active: ActiveModel, text: str) -> tuple[GoldSource, ...] | None:
    """The gold alignment of the correct output of `text`, when the task knows it (what `eval` scores heads on)."""
    return known_alignment(active.task_name, text, active.src_tokenizer)


def gold_cells(alignment: Sequence[GoldSource] | None, n_rows: int) -> list[tuple[int, int]]:
    """(decoder row, source column) cells to outline, every acceptable one: row j predicts target token j."""
    return [(row, col) for row, col in alignment_gold_cells(alignment or ()) if row < n_rows]


def gold_for(active: ActiveModel, text: str, n_rows: int, reference: str | None = None
             ) -> tuple[tuple[GoldSource, ...] | None, list[tuple[int, int]]]:
    """The gold alignment of `text` and the cells to outline on a map of `n_rows` decoder rows. `reference`: what a
    teacher-forced decoder was fed (None: free-running); a reference other than the correct output has no gold
    alignment, since the gold alignment belongs to the correct output."""
    alignment = gold_alignment_for(active, text)
    if reference is not None and reference.strip() != reference_for(active, text):
        alignment = None
    return alignment, gold_cells(alignment, n_rows)
