"""A stored decode's streamed summaries (one layer, every head) as the session's background job, with its progress,
time left and Cancel (`background.analysis_result`): the current head is summarised first (a pass over its rows
alone, 1/H of the work), so its overview is drawn while the other heads run; both are kept in the shared cache under
the decode's identity, so another session, a reload or a link draws them at once. A cancelled pass is offered again
by a button rather than restarted by the next rerun. Where a GPU is present the pass runs there (the store stays on
the CPU)."""
from __future__ import annotations

from typing import Callable

import streamlit as st
import torch

from transformer.analysis import AttentionSource, LayerSummaries, summarise_layer
from ui.server import shared_cache

from .background import JobTexts, analysis_result, can_start, current_job, show_job_progress, start_button

SUMMARY_JOB_KEY = "long_summary_job"
CANCELLED_KEY = "long_summary_cancelled"  # session state: the pass the user cancelled (not restarted by a rerun)
RESOLUTION = 96  # the overview's cells a side
DEVICE = "cuda" if torch.cuda.is_available() else None  # where tiles and passes are computed (None: the store's CPU)


def summary_key(identity: tuple, layer: int) -> tuple:
    """The shared cache's key of a decode's layer summaries (every head)."""
    return ("long-summary", *identity, layer)


def head_summary_key(identity: tuple, layer: int, head: int) -> tuple:
    """The shared cache's key of one head's summaries, computed first."""
    return ("long-summary-head", *identity, layer, head)


def summarise_stored(source: AttentionSource, layer: int, head: int | None = None,
                     progress: Callable[[float], None] | None = None) -> LayerSummaries:
    """The layer's summaries in one streamed pass (`head`: that head alone), at the overview's resolution."""
    return summarise_layer(source, "self", layer, resolution=RESOLUTION, device=DEVICE, progress=progress,
                           heads=None if head is None else [head])


def stored_summaries(source: AttentionSource, identity: tuple, layer: int, head: int
                     ) -> tuple[LayerSummaries | None, LayerSummaries | None]:
    """(every head's summaries, the current head's alone) of a stored decode's layer, each None until computed:
    kept ones at once, else the background job (started at once; drawn as its progress bar and Cancel)."""
    table, state = shared_cache(), st.session_state
    whole_key, head_key = summary_key(identity, layer), head_summary_key(identity, layer, head)
    if whole_key in table:
        return table.get(whole_key, lambda: summarise_stored(source, layer)), None
    _, n_heads, n_rows, _ = source.shape("self")
    share = 1 / (n_heads + 1) if n_heads > 1 else 0.0  # the current head's pass: about 1/H of every head's

    def run(progress: Callable[[float], None]) -> LayerSummaries:
        if share and head_key not in table:
            table.put(head_key, summarise_stored(source, layer, head, lambda f: progress(share * f)))
        whole = summarise_stored(source, layer, progress=lambda f: progress(share + (1 - share) * f))
        table.put(whole_key, whole)
        return whole

    running = current_job()
    if running is not None and running.identity != whole_key and running.identity[:1] == whole_key[:1] \
            and not running.done.is_set():  # another layer's pass still runs: its bar and Cancel, then this one
        show_job_progress(running.identity, SUMMARY_JOB_KEY)
        return None, (table.get(head_key, lambda: None) if head_key in table else None)
    stopped = state.get(CANCELLED_KEY) == whole_key
    if stopped and can_start(whole_key):
        start_button(f"Summarise layer {layer + 1} (every head, one streamed pass)", whole_key, key=SUMMARY_JOB_KEY,
                     icon=":material/play_arrow:")
    whole = analysis_result(whole_key, f"Summarising layer {layer + 1}: {n_rows:,} rows, every head", run,
                            key=SUMMARY_JOB_KEY, start=None if stopped else True,
                            texts=JobTexts(cancelled=f"The summaries of layer {layer + 1} were cancelled: its overview "
                                                     "and head statistics wait for them."),
                            on_cancel=lambda: state.__setitem__(CANCELLED_KEY, whole_key))
    if whole is not None:
        if stopped:
            state.pop(CANCELLED_KEY, None)
        return whole, None
    return None, (table.get(head_key, lambda: None) if head_key in table else None)
