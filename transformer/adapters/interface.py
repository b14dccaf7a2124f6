"""`InspectableModel`: the one interface decoding, traces, eval and export drive, for our own models and
for Hugging Face ones alike (see `hf_seq2seq.py`)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor, nn

from ..model import (
    ENCODER_DECODER,
    AttentionInputs,
    EncoderOutput,
    ForwardOutput,
    HeadMask,
    Insides,
    ModelFamily,
    StepOutput,
    StoreError,
)
from .capture import projection_weights
from .paths import PathRecord, ResidualPath, ResidualPathError, recording_path
from .store_forward import StoreChunks

Captured = dict[str, list[AttentionInputs | None]]  # kind -> each layer's softmax inputs (None: not run yet)


@dataclass(frozen=True)
class SourceText:
    """A source as the model reads it: ids (specials included), the tokenizer's own pieces, unknown words."""

    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    unknown: tuple[str, ...] = ()
    n_specials: int = 0  # how many of `ids` the tokenizer added (</s>, <s>...)


class InspectableModel(ABC):
    """A model with tokenizers whose every attention weight can be read, one decoder step at a time: an
    encoder-decoder, or a decoder-only language model (`family`; its "source" is the prompt, which is also the
    first decoder inputs, and it has no encoder or cross-attention).

    Heads to switch off travel with each call (`head_mask`, kind -> (layers, heads) of 0/1); nothing per-call
    is ever left on the shared model.
    """

    name: str  # what the views show as "which model"
    family: ModelFamily = ENCODER_DECODER  # its attention kinds, what its input is called
    source: str  # "checkpoint" or "huggingface"
    start_ids: tuple[int, ...]  # the decoder's first input(s)
    end_ids: frozenset[int]
    pad_id: int
    unemittable_ids: frozenset[int]  # never chosen, never in top-k, cannot be forced
    max_source_len: int  # source ids, specials included
    max_target_len: int  # decoder positions, start included
    vocab_size: int  # output ids

    # -- tokens ----------------------------------------------------------------------------------------------
    @abstractmethod
    def tokenize_source(self, text: str) -> SourceText:
        """The source ids and pieces for `text` (no length check: callers check `max_source_len`)."""

    @abstractmethod
    def target_ids(self, text: str) -> list[int]:
        """Target-side ids of `text`, without start or end tokens."""

    @abstractmethod
    def token_to_id(self, token: str) -> int | None:
        """The target id of one piece, or None if the vocabulary lacks it."""

    @abstractmethod
    def id_to_token(self, token_id: int) -> str:
        """The target piece of one id (the tokenizer's own spelling, specials included)."""

    def ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        """Target pieces of several ids."""
        return [self.id_to_token(int(i)) for i in ids]

    @abstractmethod
    def detokenize(self, ids: Sequence[int]) -> str:
        """Target ids to text, specials dropped."""

    def banned_after(self, decoder_ids: Sequence[int]) -> frozenset[int]:
        """Ids that cannot come right after `decoder_ids` though they can elsewhere (the last token of a banned
        multi-token sequence); `constrain` already leaves them out, this names them so forcing can refuse them."""
        return frozenset()

    def default_max_steps(self, n_source: int) -> int:
        """How many tokens a decode may produce when the caller does not say."""
        return 2 * n_source + 10

    def decoder_prefix(self, source: SourceText) -> list[int]:
        """The decoder inputs before the first output: the start ids (the prompt's ids for a decoder-only model)."""
        return list(self.start_ids)

    def prefix_tokens(self, source: SourceText) -> list[str]:
        """The pieces of `decoder_prefix(source)` (a prompt's own pieces, whichever vocabulary they come from)."""
        return self.ids_to_tokens(self.decoder_prefix(source))

    def head_groups(self) -> dict[str, tuple[int, ...]]:
        """Per kind, the key/value group of each query head (grouped-query attention); by default each head its own."""
        return {kind: tuple(range(heads)) for kind, (_, heads) in self.head_counts().items()}

    # -- compute -----------------------------------------------------------------------------------------------
    @abstractmethod
    def running(self) -> AbstractContextManager[None]:
        """Context for a decode: eval mode, no gradients, exclusive use of the model where that is needed."""

    @abstractmethod
    def encode(self, src: Tensor, head_mask: HeadMask | None = None) -> EncoderOutput:
        """Run the encoder on source ids (1, S), capturing its self-attention."""

    @abstractmethod
    def start_cache(self, encoded: EncoderOutput) -> Any:
        """An empty decoder cache for one decode of `encoded`."""

    @abstractmethod
    def step(self, token: Tensor, encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
             ) -> StepOutput:
        """Feed one decoder input (1, 1); the cache grows in place; all attention of the step comes back."""

    def prefill(self, ids: Sequence[int], encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
                ) -> StepOutput:
        """Feed the decoder prefix `ids`; the logits are those after its last token. The weights cover the rows
        a trace keeps: the last token's only, unless the family keeps the prompt's rows (`prompt_in_decoder`)."""
        for token in ids[:-1]:
            self.step(torch.tensor([[token]]), encoded, cache, head_mask)
        return self.step(torch.tensor([[ids[-1]]]), encoded, cache, head_mask)

    def select_rows(self, encoded: EncoderOutput, cache: Any, rows: Tensor) -> tuple[EncoderOutput, Any]:
        """The decode state of batch rows `rows` (B',) (repeats allowed: a hypothesis that branches): the encoder
        output and the cache with those rows, for beam search, as `generate` reorders its cache by beam index."""
        raise NotImplementedError(f"{type(self).__name__} cannot reorder its decoder cache")

    def encode_many(self, sources: Sequence[Sequence[int]]) -> EncoderOutput | None:
        """Several sources' ids encoded as one batch padded to the longest, for `step` to read with one token per row
        (padded keys masked, so each row sees only its own source); its `encoder_self` is the batch's, (B, H, S, S)
        per layer, a row's own weights in its first rows and columns. None when this model cannot decode a batch
        (then decodes take turns)."""
        return None

    @abstractmethod
    def forward(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None) -> ForwardOutput:
        """Teacher forcing: logits (1, T, V) and every weight for decoder inputs `tgt` (1, T)."""

    # -- the capture (maps or the store) -----------------------------------------------------------------------
    @abstractmethod
    def capturing(self, chunks: Mapping[str, list[StoreChunks]] | None = None) -> AbstractContextManager[Captured]:
        """For the calls this thread makes to the model inside: per kind and layer what each attention's softmax saw
        (queries, keys after RoPE, values, additive terms, rules; its output projection's input and output), or, with
        `chunks` (kind -> a `StoreChunks` per layer), each layer's store rows added to its chunks while the fused
        kernel runs (no weights). The one capture every front end uses; nothing stays on the model after it. Hold
        the model's lock around it (`running()`)."""

    def store_feed(self, ids: Tensor, cache: Any, chunks: dict[str, list[StoreChunks]], n_source: int = 0
                   ) -> Tensor:
        """Feed `ids` (1, t) after what `cache` holds through the fused path, the rows going into `chunks`
        (`capturing`); the logits (1, V) after the last id (a prefill computes no other position's logits)."""
        raise StoreError(f"{self.name}: the store's forward reads decoder-only models (Hugging Face causal LMs and "
                         "ours)")

    def feed_logits(self, ids: Tensor, cache: Any, n_source: int = 0) -> Tensor:
        """The logits (1, V) after `ids` (1, t; the first `n_source` source ids, ours) fed after what `cache` holds,
        through the model's own modules, no weights: differentiable inside `differentiable()` (the decode's fast
        output head keeps an inference-mode copy of the weights, so it is not used). Decoder-only models."""
        raise StoreError(f"{self.name}: feeding after a cache reads decoder-only models")

    # -- insides (what each head computes, the residual stream, the output function) ---------------------------
    @abstractmethod
    def insides(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None) -> Insides:
        """Teacher forcing as `forward` (for a decoder-only model `tgt` is the whole sequence and the logits cover
        every position), with every attention layer's queries, keys, values and additive score terms as its
        softmax saw them and the residual stream of each stack (`transformer.model.Insides`); nothing is kept."""

    def padded_insides(self, sources: Sequence[Sequence[int]]) -> Insides:
        """`insides` of a batch: several inputs' ids (`tokenize_source(text).ids`) padded on the right to the longest,
        the padding masked as the model masks it in training; row 0 is `sources[0]`. A decoder reads only its start
        tokens (a decoder-only model: the padded prompt, then its start). Our models mask their pad id wherever it is
        (this default); a Hugging Face adapter hands the model the attention mask its tokenizer would make."""
        src, _ = padded_rows(sources, self.pad_id)
        if not self.family.decodes:
            return self.insides(src, None)  # type: ignore[arg-type]
        start = torch.tensor([list(self.start_ids)] * len(sources), dtype=torch.long)
        return self.insides(src, torch.cat([src, start], 1) if self.family.prompt_in_decoder else start)

    def residual_path(self) -> ResidualPath:
        """What writes into and reads each residual stream: position embedding, every norm on the path, each layer's
        sublayers, W_Q/W_K/W_V per kind and layer (`transformer/adapters/paths.py`); ResidualPathError where the
        family's stream is not taken apart into parts."""
        raise ResidualPathError(f"{self.name}: its residual stream is not taken apart into parts")

    def path_insides(self, src: Tensor, tgt: Tensor | None) -> tuple[Insides, PathRecord]:
        """`insides` with what the residual path saw in the same call: every norm's input, the position embeddings,
        the rotary tables (RoPE); the hooks are borrowed for the call."""
        with recording_path(self.residual_path()) as record:
            insides = self.insides(src, tgt)  # type: ignore[arg-type]  # None only for encoder-only models, whose insides take none
        return insides, record

    @abstractmethod
    def output_head(self, residual: Tensor) -> Tensor:
        """The model's own output function of a decoder residual (..., D) -> logits (..., V): its final norm, any
        rescaling, the projection and its bias; applied to the last layer's residual it gives the logits."""

    # -- the logit lens and the DecoderLens (transformer/adapters/residual_steps.py, docs/lens-and-beams.md) --------
    def residual_layers(self) -> dict[str, list[nn.Module]]:
        """Per stack ("encoder", "decoder"), the layers whose inputs and outputs are its residual stream (what
        `insides` records; a decode records it call by call for the logit lens). Hooks on them are borrowed only."""
        raise NotImplementedError(f"{type(self).__name__} does not name its residual stream's layers")

    def record_in_cache(self, cache: Any) -> list[list[Tensor]] | None:
        """Where the decoder's own step hands out its residual stream (no hooks: our encoder-decoder's fast step
        stays fast), make `cache` (from `start_cache`) record it and return the list each call appends
        [embeddings, after layer 1, ..., after n] to; None: a recording hooks `residual_layers` instead."""
        return None

    def encoder_final_norm(self, residual: Tensor) -> Tensor:
        """The encoder's own final norm of an encoder residual (..., D) (pre-norm encoders; post-norm ones have none:
        as is); applied to the last layer's residual it gives the encoder output the decoder reads."""
        raise ValueError(f"{self.name} has no encoder")

    def encode_at(self, src: Tensor, layer: int, head_mask: HeadMask | None = None) -> EncoderOutput:
        """`encode`, but the decoder reads the encoder's residual after `layer` layers (0: the embeddings) through
        `encoder_final_norm`, not the last layer's output (the DecoderLens, Langedijk et al. 2023)."""
        raise ValueError(f"{self.name} has no encoder")

    def output_projections(self) -> dict[str, list[nn.Module]]:
        """Per kind, each layer's attention output projection (what `output_projection` reads)."""
        raise NotImplementedError(f"{self.name}: this model does not say where its attention output projections are")

    def output_projection(self, kind: str, layer: int) -> tuple[Tensor, Tensor | None]:
        """The output projection of `kind`'s layer `layer`: its weight as nn.Linear holds it, (D, H * Dv), and its
        bias (None without); head h's share of the attention output is `weight[:, h*Dv:(h+1)*Dv] @ z_h`."""
        layers = self.output_projections()[self.family.check(kind)]
        if not 0 <= layer < len(layers):
            raise ValueError(f"{self.name} has no {kind} layer {layer}: its layers are 0-{len(layers) - 1}")
        return projection_weights(layers[layer])

    @abstractmethod
    def constrain(self, decoder_ids: Sequence[int], logits: Tensor, max_length: int) -> Tensor:
        """Next-token logits (V,) with what cannot be emitted here set to -inf (specials, generation rules)."""

    @abstractmethod
    def translate(self, texts: Sequence[str]) -> list[str]:
        """Greedy outputs of many texts, batched, no weights, each as long as `default_max_steps` allows (eval)."""

    # -- heads and gradients (ablation, attribution) -------------------------------------------------------------
    @abstractmethod
    def head_counts(self) -> dict[str, tuple[int, int]]:
        """(layers, heads per layer) of each attention kind: the shape of a head mask's entry."""

    @property
    @abstractmethod
    def network(self) -> nn.Module:
        """The torch module itself (shared: callers may put nothing on it)."""

    @abstractmethod
    def embedding_paths(self) -> tuple[str, str]:
        """Dotted paths in `network` of the source and the target token-embedding modules (the ids -> vectors
        lookups before positions are added), where attribution substitutes its own embeddings on a view."""

    def token_embeddings(self, src: Tensor, tgt: Tensor) -> tuple[Tensor, ...]:
        """What the modules at `embedding_paths` return for these ids: (source, target), or one tensor for a model
        whose source path is "" (its one embedding reads the whole sequence `tgt`)."""
        return tuple(self.network.get_submodule(path)(ids)
                     for path, ids in zip(self.embedding_paths(), (src, tgt), strict=True) if path)

    @abstractmethod
    def output_path(self) -> str:
        """Dotted path in `network` of the output projection (hidden states -> logits), where attribution puts a
        module that projects only the rows it scores."""

    @abstractmethod
    def differentiable(self) -> AbstractContextManager[None]:
        """Context for gradient work: eval mode, gradients on, exclusive use of the model where that is needed."""

    @abstractmethod
    def teacher_logits(self, network: nn.Module, src: Tensor, tgt: Tensor) -> Tensor:
        """Logits (N, T, V) of `network` (this model or a view of it) for sources (N, S) and decoder inputs
        (N, T), no weights captured; differentiable inside `differentiable()`. Whatever the module at `output_path`
        returns is returned unsliced: on a view whose output projection keeps a few rows, those rows."""


def padded_rows(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[Tensor, Tensor]:
    """(ids (B, L), attention mask (B, L): 1 on a real token, 0 on padding) of `rows` padded on the right to the
    longest with `pad_id` (0 where the model has none)."""
    longest = max(len(r) for r in rows)
    filler = max(pad_id, 0)
    ids = torch.tensor([[*r, *[filler] * (longest - len(r))] for r in rows], dtype=torch.long)
    mask = torch.tensor([[1] * len(r) + [0] * (longest - len(r)) for r in rows], dtype=torch.long)
    return ids, mask
