"""`NativeSeq2Seq`: our encoder-decoder (`Seq2SeqTransformer`) behind the `InspectableModel` interface; what our
three families share is `NativeAdapter` (native_base.py)."""
from __future__ import annotations

from typing import Any, Sequence

from torch import Tensor, nn

from ..data import pad
from ..model import EncoderOutput, ForwardOutput, HeadMask, Insides, Seq2SeqTransformer, StepOutput
from ..model.encoder_decoder import DecoderCache
from .capture import complete, recording_residuals
from .native_base import NativeAdapter
from .residual_steps import check_encoder_layer, recording_calls


class NativeSeq2Seq(NativeAdapter):
    """An encoder-decoder trained here, with its source and target tokenizers (`adapter_for` picks
    `NativeDecoderOnly` for a decoder-only one)."""

    model: Seq2SeqTransformer

    def encode(self, src: Tensor, head_mask: HeadMask | None = None) -> EncoderOutput:
        return self.model.encode_with_attention(src, head_mask)

    def start_cache(self, encoded: EncoderOutput) -> Any:
        return self.model.start_cache(encoded.state[0])

    def step(self, token: Tensor, encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
             ) -> StepOutput:
        return self.model.decode_step(token, cache, encoded.state[1], need_weights=True, head_mask=head_mask)

    def select_rows(self, encoded: EncoderOutput, cache: Any, rows: Tensor) -> tuple[EncoderOutput, Any]:
        memory, mask = encoded.state
        state = (memory.index_select(0, rows), None if mask is None else mask.index_select(0, rows))
        return EncoderOutput(state, encoded.encoder_self), cache.select(rows)

    def encode_many(self, sources: Sequence[Sequence[int]]) -> EncoderOutput | None:
        """The sources padded with the pad id, which the encoder's source mask hides (and the decoder's with it)."""
        if self.family.cross_kind is None or self.family.prompt_in_decoder:
            return None
        return self.model.encode_with_attention(pad([list(ids) for ids in sources]))

    def forward(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None) -> ForwardOutput:
        return self.model.forward_with_attention(src, tgt, head_mask)

    def attention_modules(self) -> dict[str, list[Any]]:
        m = self.model
        return {"encoder_self": [layer.self_attn for layer in m.encoder],
                "decoder_self": [layer.self_attn for layer in m.decoder],
                "cross": [layer.cross_attn for layer in m.decoder]}

    def insides(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None) -> Insides:
        m = self.model
        stacks = {"encoder": list(m.encoder), "decoder": list(m.decoder)}
        with self.running(), self.capturing() as found, recording_residuals(stacks) as residual:
            logits, maps = m.forward_with_attention(src, tgt, head_mask)
        return Insides(logits, maps, complete(found, self.name), {k: tuple(v) for k, v in residual.items()})

    def output_projections(self) -> dict[str, list[nn.Module]]:
        m = self.model
        return {"encoder_self": [layer.self_attn.out_proj for layer in m.encoder],
                "decoder_self": [layer.self_attn.out_proj for layer in m.decoder],
                "cross": [layer.cross_attn.out_proj for layer in m.decoder]}

    def output_head(self, residual: Tensor) -> Tensor:
        """The final norm (pre-norm models; post-norm ones have none) and the output projection."""
        return self.model.generator(self.model.decoder_norm(residual))

    def residual_layers(self) -> dict[str, list[nn.Module]]:
        return {"encoder": list(self.model.encoder), "decoder": list(self.model.decoder)}

    def record_in_cache(self, cache: Any) -> list[list[Tensor]] | None:
        """Our encoder-decoder's cache records the stream itself, on the hook-free StepPlan path (one per decode,
        so nothing stays on the shared model); other caches (the decoder-only model's) are recorded with hooks."""
        if not isinstance(cache, DecoderCache):
            return None
        cache.residuals = []
        return cache.residuals

    def encoder_final_norm(self, residual: Tensor) -> Tensor:
        """The encoder's final LayerNorm (pre-norm models; post-norm ones have none)."""
        return self.model.encoder_norm(residual)

    def encode_at(self, src: Tensor, layer: int, head_mask: HeadMask | None = None) -> EncoderOutput:
        check_encoder_layer(layer, len(self.model.encoder), self.name)
        with recording_calls({"encoder": list(self.model.encoder)}) as found:
            out = self.model.encode_with_attention(src, head_mask)
        return EncoderOutput((self.encoder_final_norm(found["encoder"][-1][layer]), out.state[1]), out.encoder_self)

    def head_counts(self) -> dict[str, tuple[int, int]]:
        cfg = self.model.cfg
        return {"encoder_self": (cfg.n_encoder_layers, cfg.n_heads),
                "decoder_self": (cfg.n_decoder_layers, cfg.n_heads),
                "cross": (cfg.n_decoder_layers, cfg.n_heads)}

    def embedding_paths(self) -> tuple[str, str]:
        return "src_embed", "tgt_embed"

    def teacher_logits(self, network: nn.Module, src: Tensor, tgt: Tensor) -> Tensor:
        return network(src, tgt)
