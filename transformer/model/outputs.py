"""Typed outputs of an encoder-decoder's encode, decoder step and full forward (in the spirit of HF's
`Seq2SeqLMOutput`): the one container for captured attention, whichever model produced it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

import torch
from torch import Tensor

KINDS = ("encoder_self", "decoder_self", "cross")
HeadMask = Mapping[str, Tensor]  # kind -> (n_layers, n_heads) of 0/1 multipliers on each head's output


@dataclass(frozen=True)
class AttentionMaps:
    """Captured attention weights: for each kind, one (B, H, queries, keys) tensor per layer."""

    encoder_self: tuple[Tensor, ...]
    decoder_self: tuple[Tensor, ...]
    cross: tuple[Tensor, ...]

    def __getitem__(self, kind: str) -> tuple[Tensor, ...]:
        if kind not in KINDS:
            raise KeyError(f"unknown attention kind {kind!r}; expected one of {KINDS}")
        return getattr(self, kind)

    def item(self, index: int = 0) -> dict[str, Tensor]:
        """One sequence of the batch: kind -> (layers, heads, queries, keys)."""
        return {kind: torch.stack([w[index] for w in self[kind]]) for kind in KINDS}

    @staticmethod
    def from_steps(encoder_self: Sequence[Tensor], steps: Sequence["StepOutput"]) -> "AttentionMaps":
        """Stitch one-token decoder steps (batch 1) into full maps; future positions stay exactly 0."""
        n = len(steps)
        if n == 0:
            raise ValueError("no decoder steps to assemble")
        dec = []
        for layer in range(len(steps[0].decoder_self)):
            w = steps[0].decoder_self[layer]
            full = w.new_zeros(1, w.shape[1], n, n)
            for t, step in enumerate(steps):
                full[0, :, t, : t + 1] = step.decoder_self[layer][0, :, -1, -(t + 1):]
            dec.append(full)
        cross = tuple(torch.cat([s.cross[layer][:, :, -1:] for s in steps], dim=2)
                      for layer in range(len(steps[0].cross)))
        return AttentionMaps(tuple(encoder_self), tuple(dec), cross)


class ForwardOutput(NamedTuple):
    """One teacher-forced forward: logits (B, T, V) and every attention weight; unpacks as (logits, attentions)."""

    logits: Tensor
    attentions: AttentionMaps


@dataclass(frozen=True)
class EncoderOutput:
    """The encoder's result: model-specific `state` for the decoder, and the encoder self-attention per layer."""

    state: Any
    encoder_self: tuple[Tensor, ...]


@dataclass(frozen=True)
class StepOutput:
    """One incremental decoder step: next-token logits (B, V) and this step's weights per layer,
    decoder self (B, H, 1, positions so far) and cross (B, H, 1, S)."""

    logits: Tensor
    decoder_self: tuple[Tensor, ...]
    cross: tuple[Tensor, ...]
