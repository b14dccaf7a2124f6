"""Which sources wrote a feature over a text of any length: one entry, the choice inside. A decoder-only model's
document past `STORE_ABOVE` tokens (`keeps_store`, the decode's own threshold) goes through the store's fused forward
once, keeping the attention store, the residual stream entering the dictionary's layer and the layer's attention
output (each T x D, no n x n map), and the feature's sources come from the store's row (`store_feature_sources`); a
shorter text (or another family's) goes through the maps (`feature_sources`). The query is the position where the
feature is strongest over the text (where it never fires, where its pre-activation is largest), unless the caller
names one.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from ..adapters import InspectableModel, build_store, store_chunks
from ..decode import STORE_ABOVE, keeps_store, read_source
from ..model import AttentionStore
from .dictionary import Dictionary
from .feature_sources import FeatureSources, feature_sources
from .sites import DictionaryError, Place, place
from .store_sources import store_feature_sources


@dataclass(frozen=True)
class TextSources:
    """`sources` at the feature's strongest position of the text (or the one asked for), the text's `tokens` as the
    layer read them, the feature's `activations` at every position, and whether the store was read (`stored`)."""

    sources: FeatureSources
    tokens: list[str]
    activations: Tensor
    stored: bool


@contextmanager
def _inputs_of(modules: dict[str, nn.Module]) -> Iterator[dict[str, Tensor]]:
    """Each module's first input on this thread while open (hooks removed in `finally`)."""
    owner = threading.get_ident()
    found: dict[str, Tensor] = {}
    handles: list[RemovableHandle] = []

    def keep(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            if threading.get_ident() == owner:
                found[name] = (args[0] if args else kwargs["hidden_states"]).detach()
        return hook

    try:
        for name, module in modules.items():
            handles.append(module.register_forward_pre_hook(keep(name), with_kwargs=True))
        yield found
    finally:
        for handle in handles:
            handle.remove()


def _stored(adapter: InspectableModel, where: Place, ids: list[int], n_source: int
            ) -> tuple[AttentionStore, Tensor, Tensor]:
    """One fused forward of `ids`: the store, the stream entering the layer (T, D) and its attention output (T, D)."""
    assert where.kind is not None
    layer = adapter.residual_layers()[where.stack][where.layer]
    projection = adapter.output_projections()[where.kind][where.layer]
    chunks = store_chunks(adapter)
    with adapter.running(), torch.no_grad(), _inputs_of({"stream": layer, "z": projection}) as found:
        encoded = adapter.encode(torch.tensor([ids[:n_source]]))
        adapter.store_feed(torch.tensor([ids]), adapter.start_cache(encoded), chunks, n_source)
    return build_store(chunks), found["stream"][0].float(), found["z"][0].float()


def text_feature_sources(adapter: InspectableModel, dictionary: Dictionary, text: str, feature: int,
                         query: int | None = None, keep: str = "auto", continuation: Sequence[int] = ()
                         ) -> TextSources:
    """Which sources wrote `feature` over `text` (an attention-output dictionary on a prompt or source stack), at
    0-based `query` or where the feature is strongest; `continuation`: ids a decoder-only model read after the
    prompt (a decode's own steps, so that its every row is there). DictionaryError (or the decode's InputError for
    the text) in one line otherwise."""
    where = place(dictionary.site, adapter)
    if where.kind is None or adapter.family.has_cross and where.stack == "decoder":
        raise DictionaryError("which sources wrote a feature is shown for attention-output dictionaries on a prompt "
                              f"or source stack, not {where.site.label}")
    causal = adapter.family.prompt_in_decoder
    if continuation and not causal:
        raise DictionaryError(f"{adapter.name} reads no continuation after its input (not a decoder-only model)")
    dictionary.check_feature(feature)
    source = read_source(adapter, text)
    ids = [*adapter.decoder_prefix(source), *continuation] if causal else list(source.ids)
    stored = keeps_store(adapter, len(ids), keep, above=STORE_ABOVE)
    tokens = [*adapter.prefix_tokens(source), *adapter.ids_to_tokens(list(continuation))] if causal \
        else list(source.tokens)
    if stored:
        store, stream, z = _stored(adapter, where, ids, len(source.ids))
    else:
        with torch.no_grad():
            insides = (adapter.insides(torch.tensor([list(source.ids)]), torch.tensor([ids])) if continuation
                       else adapter.padded_insides([list(source.ids)]))
        merged = insides.inputs[where.kind][where.layer].merged
        assert merged is not None
        z = merged[0].float()
    activations = dictionary.encode(z)[:, feature]
    strongest = activations if activations.max() > 0 else dictionary.pre_activations(z)[:, feature]  # never fires
    at = int(strongest.argmax()) if query is None else query
    found = (store_feature_sources(adapter, store, stream, where, dictionary, feature, at) if stored
             else feature_sources(insides, where, dictionary, feature, at))
    n = found.contributions.shape[1]
    return TextSources(found, (tokens + [""] * n)[:n], activations, stored)
