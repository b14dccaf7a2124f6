"""Typed outputs of an encoder-decoder's encode, decoder step and full forward (in the spirit of HF's
`Seq2SeqLMOutput`): the one container for captured attention, whichever model (and family) produced it."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from .families import ALL_KINDS, ENCODER_DECODER, ModelFamily

KINDS = ENCODER_DECODER.kinds  # the encoder-decoder's kinds (every family's: `ALL_KINDS`)
HeadMask = Mapping[str, Tensor]  # kind -> (n_layers, n_heads) of 0/1 multipliers on each head's output


@dataclass(frozen=True, init=False, eq=False)
class AttentionMaps:
    """Captured attention weights: for each kind the model has, one (B, H, queries, keys) tensor per layer.

    Built as `AttentionMaps(encoder_self, decoder_self, cross)` for an encoder-decoder, or
    `AttentionMaps(by_kind={"self": ...})` for any family."""

    by_kind: dict[str, tuple[Tensor, ...]]

    def __init__(self, encoder_self: Sequence[Tensor] = (), decoder_self: Sequence[Tensor] = (),
                 cross: Sequence[Tensor] = (), *, by_kind: Mapping[str, Sequence[Tensor]] | None = None) -> None:
        maps = ({k: tuple(v) for k, v in by_kind.items()} if by_kind is not None else
                {"encoder_self": tuple(encoder_self), "decoder_self": tuple(decoder_self), "cross": tuple(cross)})
        for kind in maps:
            if kind not in ALL_KINDS:
                raise KeyError(f"unknown attention kind {kind!r}; expected one of {ALL_KINDS}")
        object.__setattr__(self, "by_kind", maps)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.by_kind)

    def __getitem__(self, kind: str) -> tuple[Tensor, ...]:
        if kind not in self.by_kind:
            raise KeyError(f"unknown attention kind {kind!r}; expected one of {self.kinds}")
        return self.by_kind[kind]

    @property
    def encoder_self(self) -> tuple[Tensor, ...]:
        return self.by_kind.get("encoder_self", ())

    @property
    def decoder_self(self) -> tuple[Tensor, ...]:
        return self.by_kind.get("decoder_self", ())

    @property
    def cross(self) -> tuple[Tensor, ...]:
        return self.by_kind.get("cross", ())

    def item(self, index: int = 0) -> dict[str, Tensor]:
        """One sequence of the batch: kind -> (layers, heads, queries, keys)."""
        return {kind: torch.stack([w[index] for w in maps]) for kind, maps in self.by_kind.items()}

    def rows_from(self, first: int, family: ModelFamily = ENCODER_DECODER) -> "AttentionMaps":
        """The maps with decoder rows (and decoder keys of the causal kind) before `first` left out."""
        out = {}
        for kind, maps in self.by_kind.items():
            if kind == family.decoder_kind:
                out[kind] = tuple(w[:, :, first:, first:] for w in maps)
            elif kind == family.cross_kind:
                out[kind] = tuple(w[:, :, first:] for w in maps)
            else:
                out[kind] = maps
        return AttentionMaps(by_kind=out)

    @staticmethod
    def from_steps(encoder_self: Sequence[Tensor], steps: Sequence["StepOutput"],
                   family: ModelFamily = ENCODER_DECODER) -> "AttentionMaps":
        """Stitch decoder steps (batch 1; one row each, or several for a prefill) into full maps; future positions
        stay exactly 0. The first step's rows are the first rows of the maps."""
        if len(steps) == 0:
            raise ValueError("no decoder steps to assemble")
        ends = list(itertools.accumulate(s.decoder_self[0].shape[2] for s in steps))  # keys of each step's rows
        n = ends[-1]
        dec = []
        for layer in range(len(steps[0].decoder_self)):
            parts = [s.decoder_self[layer] for s in steps]  # (1, H, q, keys so far) each
            # each step's rows: its last `end` keys, padded with zeros to n (one op a step)
            dec.append(torch.cat([F.pad(w, (end - w.shape[3], n - end))
                                  for w, end in zip(parts, ends, strict=True)], dim=2))
        maps = {family.decoder_kind: tuple(dec)}
        if family.cross_kind is not None:
            maps[family.cross_kind] = tuple(torch.cat([s.cross[layer] for s in steps], dim=2)
                                            for layer in range(len(steps[0].cross)))
        if family.encoder_kind is not None:
            maps = {family.encoder_kind: tuple(encoder_self), **maps}
        return AttentionMaps(by_kind={k: maps[k] for k in family.kinds})


class ForwardOutput(NamedTuple):
    """One teacher-forced forward: logits (B, T, V) and every attention weight; unpacks as (logits, attentions)."""

    logits: Tensor
    attentions: AttentionMaps


@dataclass(frozen=True)
class EncoderOutput:
    """The encoder's result: model-specific `state` for the decoder, and the encoder self-attention per layer
    (empty for a model without an encoder)."""

    state: Any
    encoder_self: tuple[Tensor, ...]


@dataclass(frozen=True)
class StepOutput:
    """One incremental decoder step: next-token logits (B, V) and this step's weights per layer,
    decoder self (B, H, q, positions so far) and cross (B, H, q, S) (empty without cross-attention); q is 1 for a
    step, the number of tokens fed for a prefill."""

    logits: Tensor
    decoder_self: tuple[Tensor, ...]
    cross: tuple[Tensor, ...]
