"""A decode's residual parts, captured once per decode and kept (the QK table and the route graph read them), its
route graph (whose inflows fill in as steps are asked), its source-or-prefix reliance, and the composition scores
of a model's weights, kept per weights version: all in the byte-bounded shared cache (ui.server.shared)."""
from __future__ import annotations

import pandas as pd
import streamlit as st
import torch

from transformer.adapters import ResidualPathError
from transformer.analysis import (
    DecodeParts,
    Reliance,
    RouteGraph,
    capture_decode,
    capture_path,
    composition_scores,
    reliance,
)
from transformer.decode import DecodeResult
from ui.models import ActiveModel
from ui.server import shared


def parts_key(active: ActiveModel, result: DecodeResult) -> tuple:
    """What identifies a decode for its parts: the weights, the input, the mode and the tokens it chose."""
    return active.cache_key, result.source_text, result.mode, tuple(s.token_id for s in result.steps)


@shared
def _parts(key: tuple, _active: ActiveModel, _result: DecodeResult) -> tuple[DecodeParts, RouteGraph]:
    adapter = _active.adapter
    source = adapter.tokenize_source(_result.source_text)
    src = torch.tensor([list(source.ids)])
    if not adapter.family.decodes:
        cap = capture_path(adapter, src, None)
        parts = DecodeParts(cap, tuple(source.tokens), (), 0, (), dict(adapter.family.axes))
    else:
        prefix = list(adapter.decoder_prefix(source))
        outputs = [s.token_id for s in _result.steps]
        read = [*prefix, *outputs][: len(prefix) - 1 + len(outputs)] or prefix
        cap = capture_path(adapter, src, torch.tensor([read]))
        labels = (*adapter.prefix_tokens(source), *adapter.ids_to_tokens(read[len(prefix):]))[: len(read)]
        parts = DecodeParts(cap, tuple(source.tokens), tuple(labels), len(prefix),
                            tuple(adapter.ids_to_tokens(outputs)), dict(adapter.family.axes))
    return parts, RouteGraph(parts.capture)


def decode_parts_for(active: ActiveModel, result: DecodeResult) -> tuple[DecodeParts, RouteGraph] | None:
    """The decode's residual parts and its route graph (captured on first use, kept with the decode), or None after
    one message saying why they cannot be taken apart (a teacher-forced decode, a family not covered)."""
    if result.mode == "teacher-forced":
        st.info("Taken apart for the model's own decode only: switch the step-through to the free-running output.",
                icon=":material/info:")
        return None
    try:
        with st.spinner(f"Reading {active.option.name}'s residual stream…", show_time=True):
            return _parts(parts_key(active, result), active, result)
    except ResidualPathError as exc:
        st.warning(str(exc), icon=":material/error:")
        return None


@shared
def _reliance(key: tuple, _active: ActiveModel, _result: DecodeResult) -> Reliance:
    adapter = _active.adapter
    return reliance(adapter, _result, capture_decode(adapter, _result))


def reliance_for(active: ActiveModel, result: DecodeResult) -> Reliance:
    """Source or prefix per step of the decode, its detached steps and omitted tokens, kept with the decode
    (ResidualPathError for a model whose insides cannot be read, InputError for a decode without steps)."""
    with st.spinner("Measuring what came from the source…", show_time=True):
        return _reliance(parts_key(active, result), active, result)


@shared
def _composition(model_key: str, _active: ActiveModel) -> pd.DataFrame:
    return composition_scores(_active.adapter)


def composition_for(active: ActiveModel) -> pd.DataFrame:
    """Every (writer, later reader) pair's Q-, K- and V-composition, computed once per weights and kept."""
    with st.spinner(f"Scoring how {active.option.name}'s heads read each other…", show_time=True):
        return _composition(active.cache_key, active).copy()
