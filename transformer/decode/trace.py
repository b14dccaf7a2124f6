"""AttentionTrace: attention matrices that carry their token labels; to tidy frames and JSON.

Rows are queries and columns keys, always. A trace is built with its labels and refuses mismatched shapes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from ..model import KINDS, AttentionMaps

MEAN_HEAD = -1  # wherever a head number is stored (frames, chart data, scores), head -1 is the mean over heads


def head_label(head: int | None, layer: int | None = None, *, sep: str = " ", spelled: bool = False) -> str:
    """'H2' for 0-based head 1 and 'mean' for the mean of heads (None or MEAN_HEAD); with a 0-based layer,
    'L1 H2' (or 'L1H2' with sep=""). Spelled out for prose and pickers: 'Head 2', 'Mean of heads', 'Layer 1 Head 2'."""
    mean = head is None or head == MEAN_HEAD
    if spelled:
        name = "Mean of heads" if mean else f"Head {head + 1}"
        return name if layer is None else f"Layer {layer + 1}{sep}{name}"
    name = "mean" if mean else f"H{head + 1}"
    return name if layer is None else f"L{layer + 1}{sep}{name}"


KIND_TITLES = {"encoder_self": "Encoder self-attention", "decoder_self": "Decoder self-attention",
               "cross": "Cross-attention"}


@dataclass(frozen=True)
class AttentionTrace:
    """Source tokens (S), decoder input tokens (T) and weights (layers, heads, queries, keys) per kind."""

    source_tokens: tuple[str, ...]
    decoder_input_tokens: tuple[str, ...]
    encoder_self: Tensor  # (L_enc, H, S, S)
    decoder_self: Tensor  # (L_dec, H, T, T)
    cross: Tensor  # (L_dec, H, T, S)

    def __post_init__(self) -> None:
        s, t = len(self.source_tokens), len(self.decoder_input_tokens)
        for kind in KINDS:
            w = getattr(self, kind)
            if not isinstance(w, Tensor) or w.dim() != 4:
                raise ValueError(f"{kind} must be a 4-d tensor (layers, heads, queries, keys)")
            q, k = self.axis_sizes(kind)
            if tuple(w.shape[2:]) != (q, k):
                raise ValueError(f"{kind} has shape {tuple(w.shape)} but the labels need (*, *, {q}, {k}) "
                                 f"for {s} source and {t} target tokens")
        if self.decoder_self.shape[:2] != self.cross.shape[:2]:
            raise ValueError("decoder_self and cross must have the same number of layers and heads")
        if self.encoder_self.shape[1] != self.cross.shape[1]:
            raise ValueError("encoder and decoder attention must have the same number of heads")

    @staticmethod
    def from_maps(source_tokens: Sequence[str], decoder_input_tokens: Sequence[str], maps: AttentionMaps
                  ) -> "AttentionTrace":
        """The trace of the first sequence of captured `maps` (the one conversion from model output)."""
        w = maps.item(0)
        return AttentionTrace(tuple(source_tokens), tuple(decoder_input_tokens), w["encoder_self"].float(),
                              w["decoder_self"].float(), w["cross"].float())

    def axis_sizes(self, kind: str) -> tuple[int, int]:
        q, k = self.labels(kind)
        return len(q), len(k)

    def labels(self, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query tokens, key tokens) for a kind: rows and columns of its matrices."""
        if kind == "encoder_self":
            return self.source_tokens, self.source_tokens
        if kind == "decoder_self":
            return self.decoder_input_tokens, self.decoder_input_tokens
        if kind == "cross":
            return self.decoder_input_tokens, self.source_tokens
        raise KeyError(f"unknown attention kind {kind!r}; expected one of {KINDS}")

    def weights(self, kind: str) -> Tensor:
        """All weights of a kind, (layers, heads, queries, keys)."""
        self.labels(kind)
        return getattr(self, kind)

    def n_layers(self, kind: str) -> int:
        return self.weights(kind).shape[0]

    @property
    def n_heads(self) -> int:
        return self.cross.shape[1]

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

    def masked(self, kind: str) -> Tensor:
        """(queries, keys) bool: True where the mask forbids attention (causal future in decoder self)."""
        q, k = self.axis_sizes(kind)
        if kind == "decoder_self":
            return torch.ones(q, k, dtype=torch.bool).triu(1)
        return torch.zeros(q, k, dtype=torch.bool)

    def matrix_frame(self, kind: str, layer: int, head: int | None = None) -> pd.DataFrame:
        """One (queries, keys) map as a tidy frame: query_index, query_token, key_index, key_token, weight, masked;
        head None is the mean over heads."""
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
        """Tidy frame of every (or the chosen) kind, layer and head: kind, layer, head, then `matrix_frame`'s columns."""
        frames = []
        for k in (KINDS if kind is None else (kind,)):
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
        return {k: getattr(self, k).float().tolist() for k in KINDS}
