"""AttentionTrace: attention matrices that carry their token labels; to tidy frames and JSON.

Rows are queries and columns keys, always. A trace is built with its labels and refuses mismatched shapes.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:  # pandas is imported by the frames that need it: a training process (each torchrun rank) never does
    import pandas as pd

from ..model import (  # noqa: F401 - the decode stage's face names them too
    ALL_TITLES,
    ENCODER_DECODER,
    KINDS,
    MEAN_HEAD,
    SOURCE,
    TARGET,
    AttentionMaps,
    AttentionStore,
    ModelFamily,
    family_of,
    head_label,
)

# The trace JSON's `format_version` (docs/formats.md): a file without one is version 1. New optional keys keep the
# version; a change an older reader would misread (a key renamed, removed, reshaped or made necessary) bumps it.
# Version 3: `mode` may be "sampled" (a version-2 reader would take the sampled tokens for the greedy ones), with the
# `sampling`, `lens`, `encoder_layer` and `beam` entries. Version 4: `attention` may be absent, the weights then
# recomputed from the attention store in a safetensors side file named by `store` (long inputs).
TRACE_FORMAT_VERSION = 4


class StoreMaps(Mapping[str, Tensor]):
    """A trace's maps materialised from its attention store through the tile path, each kind when first read (for
    short inputs: at long lengths read tiles from `trace.store`)."""

    def __init__(self, store: AttentionStore, kinds: Sequence[str]) -> None:
        self.store, self._kinds = store, tuple(kinds)
        self._made: dict[str, Tensor] = {}

    def __getitem__(self, kind: str) -> Tensor:
        if kind not in self._kinds:
            raise KeyError(kind)
        if kind not in self._made:
            self._made[kind] = self.store.dense(kind)
        return self._made[kind]

    def __contains__(self, kind: object) -> bool:  # Mapping's would read (materialise) the kind
        return kind in self._kinds

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)

    def shape(self, kind: str) -> tuple[int, ...]:
        return self.store.shape(kind)


KIND_TITLES = dict(ENCODER_DECODER.titles)  # the encoder-decoder's kinds; any family's: `ALL_TITLES`


@dataclass(frozen=True, init=False, eq=False)
class AttentionTrace:
    """Source tokens (S; the prompt of a decoder-only model), decoder input tokens (T) and weights
    (layers, heads, queries, keys) per attention kind of the model's family.

    An encoder-decoder's trace is built as `AttentionTrace(source, decoder_inputs, encoder_self, decoder_self,
    cross)`; any family's as `AttentionTrace(source, decoder_inputs, maps={kind: weights}, family=...)` (the
    `ModelFamily`, or its name). `family` is the family, as on an adapter; `family_name` its name (the JSON key
    `"family"`).
    `step_offset` is the query row of the first output step (the prompt's last token in a decoder-only trace).
    Built with `store=` (an `AttentionStore`) and no maps, the maps are materialised from the store when read;
    `store` stays None for a trace built from maps (or whose maps were replaced).
    """

    source_tokens: tuple[str, ...]
    decoder_input_tokens: tuple[str, ...]
    maps: dict[str, Tensor]  # kind -> (L, H, Q, K)
    family_name: str
    head_groups: dict[str, tuple[int, ...]]  # kind -> key/value group of each query head
    step_offset: int
    # key positions zeroed out with each row renormalised (`hide_tokens`): shown greyed, said beside the chart
    hidden_source: tuple[int, ...]
    hidden_target: tuple[int, ...]
    store: AttentionStore | None

    def __init__(self, source_tokens: Sequence[str], decoder_input_tokens: Sequence[str],
                 encoder_self: Tensor | None = None, decoder_self: Tensor | None = None, cross: Tensor | None = None,
                 *, maps: Mapping[str, Tensor] | None = None, family: ModelFamily | str = ENCODER_DECODER,
                 head_groups: Mapping[str, Sequence[int]] | None = None, step_offset: int = 0,
                 hidden_source: Sequence[int] = (), hidden_target: Sequence[int] = (),
                 family_name: str | None = None, store: AttentionStore | None = None) -> None:
        if family_name is not None:  # by name, as dataclasses.replace passes it
            family = family_name
        spec = family if isinstance(family, ModelFamily) else family_of(family)
        given = {k: w for k, w in (("encoder_self", encoder_self), ("decoder_self", decoder_self), ("cross", cross))
                 if w is not None}
        if store is not None and not given and (maps is None or getattr(maps, "store", None) is store):
            maps = StoreMaps(store, spec.kinds)
        else:
            maps, store = {**(maps or {}), **given}, None  # a kind's own tensor wins (replace(trace, cross=...))
        if set(maps) != set(spec.kinds):
            raise ValueError(f"a {spec.name} trace needs the kinds {', '.join(spec.kinds)}, got {', '.join(maps)}")
        put = partial(object.__setattr__, self)
        put("source_tokens", tuple(source_tokens))
        put("decoder_input_tokens", tuple(decoder_input_tokens))
        put("maps", maps if isinstance(maps, StoreMaps) else {k: maps[k] for k in spec.kinds})
        put("store", store)
        put("family_name", spec.name)
        put("step_offset", int(step_offset))
        put("hidden_source", tuple(int(i) for i in hidden_source))
        put("hidden_target", tuple(int(i) for i in hidden_target))
        s, t = len(self.source_tokens), len(self.decoder_input_tokens)
        for kind in spec.kinds:
            if store is None and (not isinstance(self.maps[kind], Tensor) or self.maps[kind].dim() != 4):
                raise ValueError(f"{kind} must be a 4-d tensor (layers, heads, queries, keys)")
            q, k = self.axis_sizes(kind)
            if tuple(self.shape(kind)[2:]) != (q, k):
                raise ValueError(f"{kind} has shape {tuple(self.shape(kind))} but the labels need (*, *, {q}, {k}) "
                                 f"for {s} source and {t} target tokens")
        heads = {self.shape(kind)[1] for kind in spec.kinds}
        layers = {self.shape(kind)[0] for kind in spec.kinds if kind != spec.encoder_kind}
        if len(layers) > 1:
            raise ValueError("decoder_self and cross must have the same number of layers and heads")
        if len(heads) > 1:
            raise ValueError("encoder and decoder attention must have the same number of heads")
        groups = {k: tuple(int(g) for g in v) for k, v in (head_groups or {}).items() if k in self.maps}
        for kind in spec.kinds:
            n_heads = self.shape(kind)[1]
            groups.setdefault(kind, tuple(range(n_heads)))
            if len(groups[kind]) != n_heads:
                raise ValueError(f"{kind} has {n_heads} heads but {len(groups[kind])} head groups")
        put("head_groups", groups)
        if not 0 <= self.step_offset <= max(t - 1, 0):
            raise ValueError(f"step_offset {self.step_offset} is outside the {t} decoder rows")

    @staticmethod
    def from_maps(source_tokens: Sequence[str], decoder_input_tokens: Sequence[str], maps: AttentionMaps,
                  family: ModelFamily = ENCODER_DECODER, head_groups: Mapping[str, Sequence[int]] | None = None,
                  step_offset: int = 0) -> "AttentionTrace":
        """The trace of the first sequence of captured `maps` (the one conversion from model output)."""
        w = maps.item(0)
        return AttentionTrace(source_tokens, decoder_input_tokens, maps={k: v.float() for k, v in w.items()},
                              family=family, head_groups=head_groups, step_offset=step_offset)

    @property
    def family(self) -> ModelFamily:
        """The model family: its kinds, their titles and axes, what the input is called."""
        return family_of(self.family_name)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The attention kinds this trace has, in display order."""
        return tuple(self.maps)

    @property
    def encoder_self(self) -> Tensor:
        return self.weights("encoder_self")

    @property
    def decoder_self(self) -> Tensor:
        return self.weights("decoder_self")

    @property
    def cross(self) -> Tensor:
        return self.weights("cross")

    def axis_sizes(self, kind: str) -> tuple[int, int]:
        q, k = self.labels(kind)
        return len(q), len(k)

    def labels(self, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query tokens, key tokens) for a kind: rows and columns of its matrices."""
        spec = self.family
        if kind not in spec.kinds:
            raise KeyError(f"unknown attention kind {kind!r}; expected one of {spec.kinds}")
        axes = {SOURCE: self.source_tokens, TARGET: self.decoder_input_tokens}
        q, k = spec.axes[kind]
        return axes[q], axes[k]

    def weights(self, kind: str) -> Tensor:
        """All weights of a kind, (layers, heads, queries, keys)."""
        self.labels(kind)
        return self.maps[kind]

    def shape(self, kind: str) -> tuple[int, ...]:
        """(layers, heads, queries, keys) of a kind, without materialising a store's maps."""
        return self.store.shape(kind) if self.store is not None else tuple(self.maps[kind].shape)

    def n_layers(self, kind: str) -> int:
        self.labels(kind)
        return self.shape(kind)[0]

    @property
    def n_heads(self) -> int:
        return self.shape(self.kinds[0])[1]

    def matrix(self, kind: str, layer: int, head: int | None = None) -> Tensor:
        """One (queries, keys) matrix; head None gives the mean over heads."""
        w = self.weights(kind)
        if not 0 <= layer < w.shape[0]:
            raise IndexError(f"{kind} has {w.shape[0]} layer(s); layer {layer} does not exist")
        if head is None:
            return w[layer].mean(0)
        if not 0 <= head < w.shape[1]:
            raise IndexError(f"{kind} has {w.shape[1]} head(s); head {head} does not exist")
        return w[layer, head]

    def hidden(self, kind: str) -> Tensor:
        """(queries, keys) bool: True in the key columns `hide_tokens` took out of this kind."""
        q, k = self.axis_sizes(kind)
        out = torch.zeros(q, k, dtype=torch.bool)
        out[:, list(self.hidden_target if kind == "decoder_self" else self.hidden_source)] = True
        return out

    def masked(self, kind: str) -> Tensor:
        """(queries, keys) bool: True where the mask forbids attention (causal future in decoder self)."""
        q, k = self.axis_sizes(kind)
        if self.family.causal(kind):
            return torch.ones(q, k, dtype=torch.bool).triu(1)
        return torch.zeros(q, k, dtype=torch.bool)

    def matrix_frame(self, kind: str, layer: int, head: int | None = None) -> pd.DataFrame:
        """One (queries, keys) map as a tidy frame: query_index, query_token, key_index, key_token, weight, masked;
        head None is the mean over heads."""
        import pandas as pd

        w = self.matrix(kind, layer, head).detach().float().cpu().numpy()  # (Q, K)
        q_tokens, k_tokens = self.labels(kind)
        q, k = w.shape
        qi, ki = np.repeat(np.arange(q), k), np.tile(np.arange(k), q)
        return pd.DataFrame({
            "query_index": qi, "query_token": np.asarray(q_tokens, dtype=object)[qi],
            "key_index": ki, "key_token": np.asarray(k_tokens, dtype=object)[ki],
            "weight": w.ravel(), "masked": self.masked(kind).numpy().ravel(),
        })

    def to_frame(self, kind: str | None = None, layer: int | None = None, head: int | None = None) -> pd.DataFrame:
        """Tidy frame of every (or the chosen) kind, layer and head: kind, layer, head, then `matrix_frame`'s
        columns."""
        import pandas as pd

        frames = []
        for k in (self.kinds if kind is None else (kind,)):
            n_layers, n_heads = self.weights(k).shape[:2]
            for li in range(n_layers) if layer is None else (layer,):
                for hi in range(n_heads) if head is None else (head,):
                    frame = self.matrix_frame(k, li, hi)
                    frame.insert(0, "kind", k)
                    frame.insert(1, "layer", li)
                    frame.insert(2, "head", hi)
                    frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    def attention_dict(self) -> dict[str, Any]:
        """The "attention" block of the trace JSON: [L][H][Q][K] nested lists per kind."""
        return {k: w.float().tolist() for k, w in self.maps.items()}
