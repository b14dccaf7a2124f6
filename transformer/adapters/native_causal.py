"""`NativeDecoderOnly`: our decoder-only transformer (a prefix LM) behind the interface, as a decoder-only model.

Its prompt is the source as the encoder-decoder's encoder would read it (tokens, then </s> as the separator),
followed by <s>: the decoder prefix. The trace holds one causal self-attention matrix over source, separator,
<s> and the output, labelled with the source tokenizer's pieces for the source part.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import Tensor, nn

from ..data import START_ID
from ..model import (
    DECODER_ONLY,
    AttentionMaps,
    DecoderOnlyTransformer,
    EncoderOutput,
    ForwardOutput,
    HeadMask,
    Insides,
    StepOutput,
    StoreError,
)
from .capture import complete, recording_residuals
from .interface import SourceText
from .native_base import NativeAdapter
from .store_forward import StoreChunks


def _with_source_rows(logits: Tensor, n_source: int) -> Tensor:
    """Target logits (B, T, V) preceded by zero rows for the source positions (they predict nothing)."""
    return torch.cat([logits.new_zeros(logits.size(0), n_source, logits.size(2)), logits], dim=1)


class NativeDecoderOnly(NativeAdapter):
    """A decoder-only model trained here, with its source and target tokenizers."""

    family = DECODER_ONLY
    model: DecoderOnlyTransformer

    def __init__(self, model: DecoderOnlyTransformer, src_tokenizer: Any, tgt_tokenizer: Any,
                 name: str = "checkpoint", *, answer_steps: int | None = None) -> None:
        super().__init__(model, src_tokenizer, tgt_tokenizer, name, answer_steps=answer_steps)
        self.max_source_len = model.cfg.max_len - 2  # room for <s> and one output

    def decoder_prefix(self, source: SourceText) -> list[int]:
        return [*source.ids, START_ID]

    def prefix_tokens(self, source: SourceText) -> list[str]:
        return [*source.tokens, self.id_to_token(START_ID)]

    def encode(self, src: Tensor, head_mask: HeadMask | None = None) -> EncoderOutput:
        return EncoderOutput((src, None), ())  # no encoder: the source is read by `prefill`

    def start_cache(self, encoded: EncoderOutput) -> Any:
        return self.model.empty_cache(1)

    def prefill(self, ids: Sequence[int], encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
                ) -> StepOutput:
        return self.model.feed(torch.tensor([list(ids)]), cache, encoded.state[0].size(1), need_weights=True,
                               head_mask=head_mask)

    def select_rows(self, encoded: EncoderOutput, cache: Any, rows: Tensor) -> tuple[EncoderOutput, Any]:
        return encoded, cache.select(rows)  # the source lives in the cache

    def step(self, token: Tensor, encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
             ) -> StepOutput:
        return self.model.decode_step(token, cache, need_weights=True, head_mask=head_mask)

    def forward(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None) -> ForwardOutput:
        """`tgt` is the whole sequence (source, <s>, continuation), as for every decoder-only model."""
        n = src.size(1)
        logits, maps = self.model.forward_with_attention(src, tgt[:, n:], head_mask)
        return ForwardOutput(_with_source_rows(logits, n), maps)

    def insides(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None) -> Insides:
        n, layers = src.size(1), list(self.model.layers)
        with self.running(), self.capturing() as found, \
                recording_residuals({"decoder": layers}) as residual:
            logits, maps = self.model.full(src, tgt[:, n:], True, head_mask)
        return Insides(logits, AttentionMaps(by_kind={"self": tuple(maps)}), complete(found, self.name),
                       {k: tuple(v) for k, v in residual.items()})

    def attention_modules(self) -> dict[str, list[Any]]:
        return {"self": [layer.self_attn for layer in self.model.layers]}

    def store_feed(self, ids: Tensor, cache: Any, chunks: dict[str, list[StoreChunks]], n_source: int = 0
                   ) -> Tensor:
        """Our fused path (`need_weights=False`) with the store's hooks; on the CPU only."""
        if next(self.model.parameters()).device.type != "cpu":
            raise StoreError(f"{self.name}: the store forward of our models runs on the CPU")
        with torch.no_grad(), self.capturing(chunks):
            return self.model.feed(ids, cache, n_source, need_weights=False).logits

    def feed_logits(self, ids: Tensor, cache: Any, n_source: int = 0) -> Tensor:
        return self.model.feed(ids, cache, n_source, need_weights=False).logits

    def output_projections(self) -> dict[str, list[nn.Module]]:
        return {"self": [layer.self_attn.out_proj for layer in self.model.layers]}

    def output_head(self, residual: Tensor) -> Tensor:
        return self.model.generator(self.model.norm(residual))

    def residual_layers(self) -> dict[str, list[nn.Module]]:
        return {"decoder": list(self.model.layers)}

    def encoder_final_norm(self, residual: Tensor) -> Tensor:
        raise ValueError(f"{self.name} has no encoder")

    def encode_at(self, src: Tensor, layer: int, head_mask: HeadMask | None = None) -> EncoderOutput:
        raise ValueError(f"{self.name} has no encoder")

    def head_counts(self) -> dict[str, tuple[int, int]]:
        return {"self": (self.model.cfg.n_decoder_layers, self.model.cfg.n_heads)}

    def embedding_paths(self) -> tuple[str, str]:
        return "", "embed"

    def token_embeddings(self, src: Tensor, tgt: Tensor) -> tuple[Tensor, ...]:
        return (self.model.embed(tgt, src.size(1)),)

    def teacher_logits(self, network: Any, src: Tensor, tgt: Tensor) -> Tensor:
        # every position of the sequence, the prompt's included: a prompt token's row predicts the next prompt token
        # (perplexity scores them), and a view's output head may keep only the rows it scores
        return network.full(src, tgt[:, src.size(1):])[0]
