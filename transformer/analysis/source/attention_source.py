"""One way to read attention at every length: a source answers a kind's shape, any tile of one head (or the mean of
heads), the weights of a block of heads x rows x keys (what the blocked passes read), which blocks a rule hides,
and the value norms a contribution needs. Two backings: the captured maps (`MapsSource`: a short input keeps
exactly what the softmax saw, n x n per head) and the attention store (`StoreSource`: queries, keys and log-sum-exps,
any tile recomputed exactly; long-inputs.md). Every analysis reads through it, so one function serves both lengths.

Whether whole maps are held is one capability (`holds_maps`); a feature that reads every weight at once names
itself in `WHOLE_MAP_FEATURES` and asks `whole_maps(source, feature)`, which refuses it in one place
(`MapsNeeded`, one line, a window of the input offered) where the source holds a store instead."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Protocol, runtime_checkable

import torch
from torch import Tensor

from ...decode import AttentionTrace
from ...model import AttentionStore
from ...model.attention_store import Device, Index, positions

WINDOW_TOKENS = 512  # tokens of a window of a long input offered as an input of its own, where whole maps are held
WHOLE_MAPS_BYTES = 256 * 2**20  # a store's kind is materialised as whole maps for a whole-map feature up to this
WHOLE_MAP_FEATURES = {  # a feature that reads every weight of a kind at once -> how it is named when refused
    "rollout": "attention rollout (every layer's whole map multiplied)",
    "aggregate": "the mean or max of every head's whole map",
    "line_view": "the line view",
    "model_view": "the model-view grid of every head",
    "animation": "animation",
    "video": "video",
    "slides": "slides beyond a window",
    "exact_patching": "exact activation patching (a run per site)",
    "edit_compare": "Compare's edit mode (an edited document)",
}


class MapsNeeded(ValueError):
    """A feature that reads whole maps, asked of a source that holds a store; the message is one line and offers a
    window of the input."""

    def __init__(self, feature: str, n_tokens: int) -> None:
        self.feature, self.n_tokens = feature, n_tokens
        super().__init__(f"{WHOLE_MAP_FEATURES[feature][:1].upper()}{WHOLE_MAP_FEATURES[feature][1:]} reads every "
                         f"weight, and this input's {n_tokens:,} tokens are kept as an attention store: open a window "
                         f"of at most {WINDOW_TOKENS:,} tokens as the input for it.")


@runtime_checkable
class AttentionSource(Protocol):
    """What every analysis reads attention through, at any length."""

    @property
    def holds_maps(self) -> bool:
        """Whether whole (layers, heads, queries, keys) maps are held (a short input's capture): the capability."""
        ...

    @property
    def kinds(self) -> tuple[str, ...]: ...

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        """(layers, heads, queries, keys) of a kind, nothing materialised."""
        ...

    def tile(self, kind: str, layer: int, head: int | None, rows: Index = slice(None), keys: Index = slice(None),
             device: Device = None) -> Tensor:
        """(rows, keys) of one head's weights (head None: the mean of heads), exact."""
        ...

    def block(self, kind: str, layer: int, heads: Tensor, rows: Tensor, keys: Tensor,
              device: Device = None) -> tuple[Tensor, Tensor | None]:
        """(heads, rows, keys) of weights on `device`, 0 where a key is hidden, and their logs where the source has
        them for free (a store's scores less the log-sum-exp; -1e4 where hidden), else None."""
        ...

    def block_unseen(self, kind: str, layer: int, first_row: int, last_row: int, first_key: int,
                     last_key: int) -> bool:
        """Whether the rules hide every key of a block from every row of it (the pass skips it)."""
        ...

    def offset(self, kind: str, layer: int) -> int:
        """The first query row's position among the keys (a decode step's row sits after the prompt)."""
        ...

    def value_norms(self, kind: str, layer: int) -> Tensor | None:
        """(heads, keys) ||W_O^h v_j||, or None where the source has none."""
        ...

    def kv_head(self, kind: str, layer: int, head: int) -> int:
        """The key/value head query head `head` reads (grouped-query models: one for several query heads)."""
        ...

    def score_row(self, kind: str, layer: int, head: int, row: int) -> ScoreRow | None:
        """One head's row before its softmax (q, q . k, scores, log-sum-exp) where the source keeps the queries and
        keys (a store), else None (a short input's are the insides', `head_computation`)."""
        ...


@dataclass(frozen=True)
class ScoreRow:
    """One head's row before its softmax, over every key (K): what a store recomputes it from."""

    kv_head: int
    query_vector: Tensor  # (Dh,) after any rotation
    dots: Tensor  # (K,) q . k_j
    scale: float
    scores: Tensor  # (K,) the softmax's input: scale * dots, any bias, soft-cap, -inf where masked
    lse: float  # the row's log-sum-exp (the sink's logit included)
    window: int | None  # the layer's sliding window, where the rules have one


def _check(kinds: tuple[str, ...], shape: tuple[int, int, int, int], kind: str, layer: int) -> None:
    if kind not in kinds:
        raise KeyError(f"unknown attention kind {kind!r}; the source has {kinds}")
    if not 0 <= layer < shape[0]:
        raise IndexError(f"{kind} has {shape[0]} layer(s); layer {layer} does not exist")


@dataclass(frozen=True)
class MapsSource:
    """Captured maps, kind -> (layers, heads, queries, keys): what the softmax saw; `causal` kinds hide later keys
    (their cells are 0 in a real capture; the rule also ignores whatever a hand-made map holds there)."""

    maps: Mapping[str, Tensor]
    causal: frozenset[str] = frozenset()
    norms: Mapping[str, Tensor] = field(default_factory=dict)  # kind -> (layers, heads, keys), where captured
    groups: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # kind -> each query head's key/value head
    holds_maps: bool = True

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.maps)

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        if kind not in self.maps:
            raise KeyError(f"unknown attention kind {kind!r}; the source has {self.kinds}")
        layers, heads, q, k = self.maps[kind].shape
        return int(layers), int(heads), int(q), int(k)

    def _block(self, kind: str, layer: int, heads: Tensor, rows: Tensor, keys: Tensor) -> Tensor:
        _check(self.kinds, self.shape(kind), kind, layer)
        w = self.maps[kind][layer].detach().float().cpu()
        w = w.index_select(0, heads.cpu()).index_select(1, rows.cpu()).index_select(2, keys.cpu())
        if kind in self.causal:
            w = w.masked_fill(keys.cpu()[None, None, :] > rows.cpu()[None, :, None], 0.0)
        return w

    def tile(self, kind: str, layer: int, head: int | None, rows: Index = slice(None), keys: Index = slice(None),
             device: Device = None) -> Tensor:
        _, n_heads, q, k = self.shape(kind)
        if head is not None and not 0 <= head < n_heads:
            raise IndexError(f"{kind} has {n_heads} head(s); head {head} does not exist")
        heads = torch.arange(n_heads) if head is None else torch.tensor([head])
        return self._block(kind, layer, heads, positions(rows, q), positions(keys, k)).mean(0)

    def block(self, kind: str, layer: int, heads: Tensor, rows: Tensor, keys: Tensor,
              device: Device = None) -> tuple[Tensor, Tensor | None]:
        w = self._block(kind, layer, heads, rows, keys)
        return w.to(w.device if device is None else torch.device(device)), None

    def block_unseen(self, kind: str, layer: int, first_row: int, last_row: int, first_key: int,
                     last_key: int) -> bool:
        return kind in self.causal and first_key > last_row

    def offset(self, kind: str, layer: int) -> int:
        return 0

    def value_norms(self, kind: str, layer: int) -> Tensor | None:
        return self.norms[kind][layer] if kind in self.norms else None

    def kv_head(self, kind: str, layer: int, head: int) -> int:
        groups = self.groups.get(kind)
        return int(groups[head]) if groups else head

    def score_row(self, kind: str, layer: int, head: int, row: int) -> ScoreRow | None:
        return None


@dataclass(frozen=True)
class StoreSource:
    """The attention store: any weight recomputed exactly from queries, keys and log-sum-exps, never n x n."""

    store: AttentionStore
    holds_maps: bool = False

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.store.kinds

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        return self.store.shape(kind)

    def tile(self, kind: str, layer: int, head: int | None, rows: Index = slice(None), keys: Index = slice(None),
             device: Device = None) -> Tensor:
        return self.store.tile(kind, layer, head, rows, keys, device)

    def block(self, kind: str, layer: int, heads: Tensor, rows: Tensor, keys: Tensor,
              device: Device = None) -> tuple[Tensor, Tensor | None]:
        one = self.store.layer(kind, layer)
        log_w = one.scores(heads, rows, keys, device) - one.lse_rows(heads, rows, device)
        torch.nan_to_num_(log_w, nan=-1e4, neginf=-1e4)  # hidden keys (and rows that see nothing): weight 0
        return torch.exp(log_w), log_w

    def block_unseen(self, kind: str, layer: int, first_row: int, last_row: int, first_key: int,
                     last_key: int) -> bool:
        return self.store.layer(kind, layer).rules.block_unseen(first_row, last_row, first_key, last_key)

    def offset(self, kind: str, layer: int) -> int:
        return int(self.store.layer(kind, layer).rules.offset)

    def value_norms(self, kind: str, layer: int) -> Tensor | None:
        return self.store.layer(kind, layer).value_norms

    def kv_head(self, kind: str, layer: int, head: int) -> int:
        return int(self.store.layer(kind, layer).groups[head])

    def score_row(self, kind: str, layer: int, head: int, row: int) -> ScoreRow | None:
        one = self.store.layer(kind, layer)
        q, kv = one.queries[head, row].float(), one.groups[head]
        dots = one.keys[kv].float() @ q
        scores = one.rules.scores(dots[None, None], torch.tensor([head]), torch.tensor([row]),
                                  torch.arange(one.n_keys))[0, 0]
        lse = scores.logsumexp(-1)
        if one.rules.sinks is not None:
            lse = torch.logaddexp(lse, one.rules.sinks.float()[head])
        return ScoreRow(kv, q, dots, float(one.rules.scale), scores, float(lse), one.rules.window)


def attention_source(what: AttentionTrace | AttentionStore | AttentionSource) -> AttentionSource:
    """The source of a trace (its store where it holds one, else its captured maps), of a store, or a source as is."""
    if isinstance(what, AttentionStore):
        return StoreSource(what)
    if isinstance(what, AttentionTrace):
        if what.store is not None:
            return StoreSource(what.store)
        causal = frozenset(k for k in what.kinds if what.family.causal(k))
        return MapsSource({k: what.maps[k] for k in what.kinds}, causal, groups=dict(what.head_groups))
    return what


def whole_maps(what: AttentionTrace | AttentionSource, feature: str, kind: str) -> Tensor:
    """A kind's whole (layers, heads, queries, keys) maps for `feature` (a key of `WHOLE_MAP_FEATURES`): the
    captured maps, or a store's materialised while they stay within WHOLE_MAPS_BYTES (a short input kept as a store,
    a saved trace reopened), else `MapsNeeded`: the one place such a feature is refused."""
    if feature not in WHOLE_MAP_FEATURES:
        raise KeyError(f"unknown whole-map feature {feature!r}; known: {', '.join(WHOLE_MAP_FEATURES)}")
    source = attention_source(what)
    if isinstance(source, MapsSource):
        return source.maps[kind]
    if 4 * math.prod(source.shape(kind)) > WHOLE_MAPS_BYTES:
        raise MapsNeeded(feature, source.shape(kind)[-1])
    if isinstance(what, AttentionTrace):
        return what.weights(kind)  # materialised once, kept by the trace
    assert isinstance(source, StoreSource)
    return source.store.dense(kind)


def refused_features(source: AttentionSource) -> tuple[str, ...]:
    """The names of the whole-map features this source refuses (none where it holds maps)."""
    return () if source.holds_maps else tuple(WHOLE_MAP_FEATURES.values())
