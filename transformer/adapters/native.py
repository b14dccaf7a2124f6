"""`NativeSeq2Seq`: our `Seq2SeqTransformer` with its tokenizers behind the `InspectableModel` interface."""
from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Sequence

import torch
from torch import Tensor, nn

from ..data import END_ID, START_ID, Tokenizer, pad, source_ids
from ..data.batching import PAD_ID
from ..model import EncoderOutput, ForwardOutput, HeadMask, Insides, Seq2SeqTransformer, StepOutput, eval_mode
from ..model.encoder_decoder import DecoderCache
from .capture import complete, recording_native, recording_residuals
from .interface import InspectableModel, SourceText
from .paths import ResidualPath, native_path
from .residual_steps import check_encoder_layer, recording_calls

UNEMITTABLE = (PAD_ID, START_ID)  # never chosen, never in top-k, never forced: the model cannot output them


def ban(logits: Tensor, ids: Sequence[int] | Tensor) -> Tensor:
    """A copy of `logits` (..., V) with the given ids set to -inf (one op with a tensor of ids)."""
    if not isinstance(ids, Tensor):
        ids = torch.tensor(list(ids), dtype=torch.long, device=logits.device)
    return logits.index_fill(-1, ids, float("-inf"))


_UNEMITTABLE_IDS = torch.tensor(UNEMITTABLE)  # `ban`'s index, built once: constrain runs at every decoder step


class NativeSeq2Seq(InspectableModel):
    """An encoder-decoder trained here, with its source and target tokenizers (`adapter_for` picks
    `NativeDecoderOnly` for a decoder-only one)."""

    source = "checkpoint"
    start_ids = (START_ID,)
    end_ids = frozenset({END_ID})
    pad_id = PAD_ID
    unemittable_ids = frozenset(UNEMITTABLE)

    def __init__(self, model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
                 name: str = "checkpoint") -> None:
        self.model, self.src_tokenizer, self.tgt_tokenizer, self.name = model, src_tokenizer, tgt_tokenizer, name
        self.max_source_len = self.max_target_len = model.cfg.max_len
        self.vocab_size = tgt_tokenizer.vocab_size

    def tokenize_source(self, text: str) -> SourceText:
        ids = self.src_tokenizer.encode(text)
        unk = self.src_tokenizer.unk_id
        unknown = tuple(tok for tok, i in zip(self.src_tokenizer.split(text), ids) if i == unk)
        full = source_ids(ids) if ids else []
        return SourceText(tuple(full), tuple(self.src_tokenizer.ids_to_tokens(full)), unknown, len(full) - len(ids))

    def target_ids(self, text: str) -> list[int]:
        return self.tgt_tokenizer.encode(text)

    def token_to_id(self, token: str) -> int | None:
        return self.tgt_tokenizer.token_to_id(token)

    def id_to_token(self, token_id: int) -> str:
        return self.tgt_tokenizer.id_to_token(token_id)

    def detokenize(self, ids: Sequence[int]) -> str:
        return self.tgt_tokenizer.decode(ids)

    def running(self) -> AbstractContextManager[None]:
        return eval_mode(self.model)

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

    def insides(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None) -> Insides:
        m = self.model
        attention = {"encoder_self": [layer.self_attn for layer in m.encoder],
                     "decoder_self": [layer.self_attn for layer in m.decoder],
                     "cross": [layer.cross_attn for layer in m.decoder]}
        stacks = {"encoder": list(m.encoder), "decoder": list(m.decoder)}
        with self.running(), recording_native(attention) as found, recording_residuals(stacks) as residual:
            logits, maps = m.forward_with_attention(src, tgt, head_mask)
        return Insides(logits, maps, complete(found, self.name), {k: tuple(v) for k, v in residual.items()})

    def output_projections(self) -> dict[str, list[nn.Module]]:
        m = self.model
        return {"encoder_self": [layer.self_attn.out_proj for layer in m.encoder],
                "decoder_self": [layer.self_attn.out_proj for layer in m.decoder],
                "cross": [layer.cross_attn.out_proj for layer in m.decoder]}

    def residual_path(self) -> ResidualPath:
        return native_path(self.model)

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

    def constrain(self, decoder_ids: Sequence[int], logits: Tensor, max_length: int) -> Tensor:
        return ban(logits, _UNEMITTABLE_IDS.to(logits.device))

    def translate(self, texts: Sequence[str]) -> list[str]:
        return decode_texts(self.model, self.src_tokenizer, self.tgt_tokenizer, texts)

    def head_counts(self) -> dict[str, tuple[int, int]]:
        cfg = self.model.cfg
        return {"encoder_self": (cfg.n_encoder_layers, cfg.n_heads), "decoder_self": (cfg.n_decoder_layers, cfg.n_heads),
                "cross": (cfg.n_decoder_layers, cfg.n_heads)}

    @property
    def network(self) -> nn.Module:
        return self.model

    def embedding_paths(self) -> tuple[str, str]:
        return "src_embed", "tgt_embed"

    def output_path(self) -> str:
        return "generator"

    def differentiable(self) -> AbstractContextManager[None]:
        return eval_mode(self.model, torch.enable_grad)

    def teacher_logits(self, network: nn.Module, src: Tensor, tgt: Tensor) -> Tensor:
        return network(src, tgt)


def greedy_batch(model: Seq2SeqTransformer, src: Tensor, max_steps: int) -> list[list[int]]:
    """Greedy output ids (without </s>) for a padded source batch (B, S); fast path, no weights."""
    with eval_mode(model):
        memory, mask = model.encode(src)
        cache = model.start_cache(memory)
        b = src.size(0)
        token = torch.full((b, 1), START_ID, dtype=torch.long, device=src.device)
        done = torch.zeros(b, dtype=torch.bool, device=src.device)
        out = []
        for _ in range(min(max_steps, model.max_new_tokens(src.size(1)))):
            logits = ban(model.decode_step(token, cache, mask).logits, UNEMITTABLE)
            token = logits.argmax(-1, keepdim=True)  # (B, 1)
            out.append(token[:, 0])
            done |= token[:, 0] == END_ID
            if bool(done.all()):
                break
    rows = torch.stack(out, 1).tolist() if out else [[] for _ in range(b)]
    return [r[: r.index(END_ID)] if END_ID in r else r for r in rows]


def decode_texts(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
                 texts: Sequence[str], batch_size: int = 256) -> list[str]:
    """Greedy translations of many texts, batched (sources longer than the model allows are cut)."""
    outputs: list[str] = []
    limit = model.cfg.max_len - 1
    device = next(model.parameters()).device
    for i in range(0, len(texts), batch_size):
        ids = [source_ids(src_tokenizer.encode(t)[:limit]) for t in texts[i: i + batch_size]]
        longest = max(len(s) for s in ids)
        for row in greedy_batch(model, pad(ids).to(device), max_steps=2 * longest + 10):
            outputs.append(tgt_tokenizer.decode(row))
    return outputs
