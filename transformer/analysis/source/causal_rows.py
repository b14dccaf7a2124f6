"""The causal kind's weights at a few query rows of a teacher-forced input, and the logits there, without the n x n
maps when the input is long: the long-range detectors read only the copy region's rows (the retrieval score) and
the last window of queries (the pattern labels).

A decoder-only model (ours, Hugging Face causal LMs) reads the input through the attention store's fused forward
(`adapter.store_feed`: queries and keys as the model's own attention code made them, after RoPE, and each row's
log-sum-exp), a chunk at a time (`chunk_size`: one call's causal mask would be n x n), and each row's weights are
recomputed from the store (`LayerStore.weights`; the queries of the rows not asked are dropped as they come), a
layer at a time; for logits at several rows the input goes in up to the first row, then one token a row. Elsewhere
(the decoder side of encoder-decoders, whose decoder positions are few; a model the store refuses, `StoreError`) it
is the plain forward with every map, whose rows are then taken: the numbers are the same either way, only the
memory differs.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import torch
from torch import Tensor

from ...adapters import InspectableModel, StoreChunks, store_chunks
from ...decode import STORE_ABOVE, keeps_store
from ...model import LayerStore, StoreError

CHUNK_BYTES = 256 * 2**20  # a fed chunk's masks (chunk x keys, per layer and head) stay about this size


@dataclass(frozen=True)
class CausalRows:
    """The logits (R, V) at the rows (None where not asked) and each layer's weights at them, (H, R, T) over every
    key of the input (0 beyond the causal edge), recomputed a layer at a time by `layer`."""

    rows: Tensor
    logits: Tensor | None
    n_layers: int
    layer: Callable[[int], Tensor]
    stored: bool  # read through the store (no n x n map made)

    def layers(self) -> list[Tensor]:
        """Every layer's (H, R, T)."""
        return [self.layer(i) for i in range(self.n_layers)]


def _from_maps(adapter: InspectableModel, src: Tensor, inputs: Sequence[int], rows: Tensor) -> CausalRows:
    """The rows of the plain forward's maps (every layer's (H, T, T) made)."""
    with adapter.running():
        logits, maps = adapter.forward(src, torch.tensor([list(inputs)]))
    kind = adapter.family.decoder_kind
    assert kind is not None, "a causal model decodes"
    taken = [w[0][:, rows.to(w.device)].float().cpu() for w in maps[kind]]
    return CausalRows(rows, logits[0, rows.to(logits.device)].float().cpu(), len(taken), taken.__getitem__, False)


def chunk_size(adapter: InspectableModel, n_keys: int) -> int:
    """Tokens fed at a time: a whole prompt's causal mask (ours, and the capture's) would be n x n, a chunk's is
    chunk x n (per layer and head, at most)."""
    layers, heads = adapter.head_counts()[adapter.family.kinds[0]]
    return max(64, min(4096, CHUNK_BYTES // (4 * n_keys * (layers + heads))))


def _trim(chunks: list[StoreChunks], first: int, end: int) -> None:
    """Drop the queries and log-sum-exps of the rows before `first` from each layer's last call (rows up to `end`):
    every key is read, only the rows asked are (a model's queries outweigh its keys under grouped-query
    attention)."""
    for layer in chunks:
        t = layer.queries[-1].shape[1]
        cut = max(0, min(t, first - (end - t)))
        if cut:
            layer.queries[-1], layer.lse[-1] = layer.queries[-1][:, cut:].clone(), layer.lse[-1][:, cut:].clone()


def _feed(adapter: InspectableModel, ids: Tensor, cache: object, chunks: dict[str, list[StoreChunks]], n_source: int,
          chunk: int, first: int) -> Tensor:
    """`ids` (1, t) fed after `cache` a chunk at a time (the first `n_source` of them source ids), the rows before
    `first` dropped as they come; the logits after the last."""
    logits, fed = torch.empty(0), 0
    for start in range(0, ids.shape[1], chunk):
        part = ids[:, start:start + chunk]
        logits = adapter.store_feed(part, cache, chunks, max(0, min(n_source - start, chunk)))
        fed += part.shape[1]
        _trim(chunks["self"], first, fed)
    return logits


def _layer(chunks: StoreChunks, first: int) -> LayerStore:
    """A layer's store whose rows start at position `first` (every key from 0)."""
    if chunks.rules is None:
        raise StoreError("no attention was recorded for a layer (the store forward needs the fused path)")
    return LayerStore(torch.cat(chunks.queries, 1), torch.cat(chunks.keys, 1), torch.cat(chunks.lse, 1),
                      replace(chunks.rules, offset=first), chunks.groups, None)


def _from_store(adapter: InspectableModel, src: Tensor, inputs: Sequence[int], rows: Tensor,
                with_logits: bool) -> CausalRows:
    """The rows from the store of the input up to the last row (a decoder-only model)."""
    ids, first, last = torch.tensor([list(inputs)]), int(rows[0]), int(rows[-1])
    chunks, chunk = store_chunks(adapter), chunk_size(adapter, len(inputs))
    with adapter.running():
        cache = adapter.start_cache(adapter.encode(ids[:, :0]))
        at = (first if with_logits else last) + 1
        logits = [_feed(adapter, ids[:, :at], cache, chunks, src.shape[1], chunk, first)]  # ours: source ids first
        for position in range(at, last + 1) if with_logits else ():
            logits.append(adapter.store_feed(ids[:, position:position + 1], cache, chunks))
    layers, n_keys = [_layer(one, first) for one in chunks["self"]], len(inputs)

    def layer(i: int) -> Tensor:
        one = layers[i]
        w = one.weights(torch.arange(one.n_heads), rows - first, torch.arange(one.n_keys))
        return torch.nn.functional.pad(w, (0, n_keys - one.n_keys))

    found = torch.cat(logits)[rows - first].float() if with_logits else None
    return CausalRows(rows, found, len(layers), layer, True)


def causal_rows(adapter: InspectableModel, src: Tensor, inputs: Sequence[int], rows: Tensor, *,
                with_logits: bool = True, store_above: int = STORE_ABOVE) -> CausalRows:
    """The causal kind's weights (and logits) at `rows` (consecutive positions, ascending) of `inputs` teacher-forced
    after `src` (`_causal_setup`'s): through the store for a decoder-only model's input of more than `store_above`
    tokens, else (or where the store does not apply) from the plain forward's maps."""
    rows = torch.as_tensor(rows, dtype=torch.long)
    if len(rows) > 1 and not bool((rows.diff() == 1).all()):
        raise ValueError("the rows must be consecutive positions")
    if keeps_store(adapter, len(inputs), above=store_above):
        try:
            return _from_store(adapter, src, inputs, rows, with_logits)
        except StoreError:
            pass  # a model the store cannot reproduce: its maps, as before
    return _from_maps(adapter, src, inputs, rows)
