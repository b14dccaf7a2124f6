"""`HFMaskedLM`: a Hugging Face encoder-only masked language model (BERT, RoBERTa, DistilBERT, ModernBERT) behind
the same interface as the other families, with eager attention so every weight is really there.

There is no decoding: the input's tokens go through one bidirectional stack once, and the model's masked-LM head
gives logits at every position (`forward`); the predictions that matter are those at the mask tokens
(`transformer.decode.fill_masks`). The one attention kind is `encoder_self`; its residual stream is "encoder".
A sentence pair is one input whose segments come from the separator: BERT's token type ids (0 up to and including
the first separator, 1 after) are derived from the ids themselves, as its tokenizer makes them for a pair.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from ..model import (
    ENCODER_ONLY,
    AttentionMaps,
    EncoderOutput,
    ForwardOutput,
    HeadMask,
    Insides,
    StepOutput,
)
from .architectures import architecture_of
from .capture import complete, recording_residuals
from .hf_base import HFAdapter, model_lock
from .hf_capture import adopt
from .hf_load import DEFAULT_MAX_PARAMS, HFModelError, load_pretrained
from .hf_seq2seq import heads_off
from .interface import SourceText, padded_rows

if TYPE_CHECKING:
    from transformers import PreTrainedModel  # its stubs are not followed (pyproject): Any to mypy

NO_POSITION_LIMIT = 512


def mlm_head(model: PreTrainedModel) -> Callable[[Tensor], Tensor]:
    """The model's own function from the last layer's output to the logits, as its architecture file declares it
    (ModernBERT: the final norm, then the MLM head's dense + activation + norm, then the projection with its bias)."""
    arch = architecture_of(model)
    if arch.masked_head is None:
        raise HFModelError(f"{type(model).__name__}: its architecture file declares no masked-LM head")
    return arch.masked_head(model)


class HFMaskedLM(HFAdapter):
    """A pretrained Hugging Face masked language model and its tokenizer."""

    family = ENCODER_ONLY
    start_ids: tuple[int, ...] = ()

    def __init__(self, model: PreTrainedModel, tokenizer: Any, name: str) -> None:
        self.model, self.tokenizer, self.name, self.prefix = model, tokenizer, name, ""
        self.architecture = adopt(model, name)
        cfg = model.config
        self.generation_config = None
        if tokenizer.mask_token_id is None:
            raise HFModelError(f"{name}'s tokenizer has no mask token: it cannot predict masked words")
        self.mask_id = int(tokenizer.mask_token_id)
        self.mask_token = str(tokenizer.mask_token)
        self.end_ids = frozenset(i for i in (tokenizer.sep_token_id,) if i is not None)
        self.pad_id = int(tokenizer.pad_token_id) if tokenizer.pad_token_id is not None else -1
        self.separator_ids = frozenset(int(i) for i in (tokenizer.sep_token_id, tokenizer.eos_token_id)
                                       if i is not None)
        self.special_ids = frozenset(int(i) for i in tokenizer.all_special_ids)  # the mask's included
        self.unemittable_ids = frozenset()
        positions = getattr(cfg, "max_position_embeddings", None) or NO_POSITION_LIMIT
        positions -= self.architecture.position_offset(cfg)  # RoBERTa's start after the pad id
        self.max_source_len = self.max_target_len = int(positions)
        self.n_heads = int(getattr(cfg, "num_attention_heads", None) or cfg.n_heads)
        self.n_layers = len(self._layers())
        self.vocab_size = model.get_output_embeddings().weight.shape[0]
        self.uses_token_types = (getattr(cfg, "type_vocab_size", 0) or 0) > 1
        self._lock = model_lock(model)
        self._n_tokens = len(tokenizer)

    @classmethod
    def load(cls, name: str, prefix: str = "", max_params: int = DEFAULT_MAX_PARAMS) -> HFMaskedLM:
        """Load a folder or hub id with every safety check of `hf_load` (`prefix` is for encoder-decoders only)."""
        model, tokenizer, _ = load_pretrained(name, max_params, families=("encoder-only",))
        return cls(model, tokenizer, name)

    def describe(self) -> dict[str, Any]:
        cfg = self.model.config
        return {"source": "huggingface", "name": self.name, "model_type": cfg.model_type, "family": self.family.name,
                "d_model": getattr(cfg, "hidden_size", None) or getattr(cfg, "dim", None), "n_heads": self.n_heads,
                "n_layers": self.n_layers, "context": self.max_source_len, "tgt_vocab_size": self.vocab_size,
                "parameters": sum(p.numel() for p in self.model.parameters()), "mask_token": self.mask_token}

    # -- tokens ------------------------------------------------------------------------------------------------
    def _source(self, ids: Sequence[int]) -> SourceText:
        tokens = self.tokenizer.convert_ids_to_tokens(list(ids))
        unk = self.tokenizer.unk_token_id
        unknown = tuple(t for t, i in zip(tokens, ids, strict=True)
                        if unk is not None and i == unk and t != self.mask_token)
        special = set(self.tokenizer.all_special_ids) - {self.mask_id}
        return SourceText(tuple(int(i) for i in ids), tuple(tokens), unknown, sum(i in special for i in ids))

    def tokenize_source(self, text: str) -> SourceText:
        return self._source(self.tokenizer(text, verbose=False).input_ids)

    def tokenize_pair(self, first: str, second: str) -> SourceText:
        """A sentence pair as the tokenizer joins it ([CLS] A [SEP] B [SEP]; RoBERTa's <s> A </s></s> B </s>)."""
        return self._source(self.tokenizer(first, second, verbose=False).input_ids)

    def segments(self, ids: Sequence[int]) -> tuple[int, ...]:
        """Segment of each position, 0 (A) or 1 (B): the tokenizer's token type ids for a pair where it makes them
        (BERT), which are 0 up to and including the first separator and 1 after; the same rule from the separator
        tokens otherwise (RoBERTa: B starts after the first </s>)."""
        out, segment = [], 0
        for i in ids:
            out.append(segment)
            if int(i) in self.separator_ids:
                segment = 1
        return tuple(out)

    def target_ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False, verbose=False).input_ids)

    def default_max_steps(self, n_source: int) -> int:
        return 0

    # -- compute -----------------------------------------------------------------------------------------------
    def _inputs(self, src: Tensor, attention_mask: Tensor | None = None) -> dict[str, Tensor]:
        mask = torch.ones_like(src) if attention_mask is None else attention_mask
        inputs = {"input_ids": src, "attention_mask": mask}
        if self.uses_token_types:
            inputs["token_type_ids"] = torch.tensor([list(self.segments(row.tolist())) for row in src],
                                                    dtype=torch.long, device=src.device)
        return inputs

    def _layers(self) -> list[nn.Module]:
        return self.architecture.layers(self.model, "encoder")

    def _run(self, src: Tensor, head_mask: HeadMask | None) -> Any:
        with self._lock, heads_off(self.model, head_mask):
            return self.model(**self._inputs(src), output_attentions=True, return_dict=True)

    def _maps(self, out: Any) -> AttentionMaps:
        return AttentionMaps(by_kind={"encoder_self": self._check("encoder", out.attentions, self.n_layers)})

    def encode(self, src: Tensor, head_mask: HeadMask | None = None) -> EncoderOutput:
        out = self._run(src, head_mask)
        return EncoderOutput(out.logits, self._maps(out).encoder_self)

    def start_cache(self, encoded: EncoderOutput) -> Any:
        raise HFModelError(f"{self.name} is an encoder-only model: it predicts at its masks (fill) and does not decode")

    def step(self, token: Tensor, encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
             ) -> StepOutput:
        raise HFModelError(f"{self.name} is an encoder-only model: it predicts at its masks (fill) and does not decode")

    def forward(self, src: Tensor, tgt: Tensor | None = None, head_mask: HeadMask | None = None) -> ForwardOutput:
        """The masked-LM logits (1, S, V) at every input position and the self-attention; `tgt` is not read."""
        out = self._run(src, head_mask)
        return ForwardOutput(out.logits, self._maps(out))

    def insides(self, src: Tensor, tgt: Tensor | None = None, head_mask: HeadMask | None = None,
                attention_mask: Tensor | None = None) -> Insides:
        """`forward` with every layer's softmax inputs and the residual stream "encoder"; `tgt` is not read;
        `attention_mask` (B, S): a batch's real tokens (1) and padding (0), None: all real."""
        layers = self._layers()
        with self.running(), heads_off(self.model, head_mask), self.capturing() as found, \
                recording_residuals({"encoder": layers}) as residual:
            out = self.model(**self._inputs(src, attention_mask), output_attentions=True, return_dict=True)
        return Insides(out.logits, self._maps(out), complete(found, self.name),
                       {k: tuple(v) for k, v in residual.items()})

    def padded_insides(self, sources: Sequence[Sequence[int]]) -> Insides:
        """The inputs padded on the right, as the tokenizer pads a batch, with the attention mask that hides the
        padding."""
        ids, mask = padded_rows(sources, self.pad_id)
        return self.insides(ids, None, attention_mask=mask)

    def output_head(self, residual: Tensor) -> Tensor:
        """The masked-LM head of a residual (..., D): ModernBERT's final norm, dense, activation, norm, projection."""
        return mlm_head(self.model)(residual)

    def constrain(self, decoder_ids: Sequence[int], logits: Tensor, max_length: int) -> Tensor:
        return logits

    # -- heads and gradients -------------------------------------------------------------------------------------
    def head_counts(self) -> dict[str, tuple[int, int]]:
        return {"encoder_self": (self.n_layers, self.n_heads)}

    def embedding_paths(self) -> tuple[str, str]:
        """The token embedding the input goes through, and no decoder-side embedding ("")."""
        names = {id(m): name for name, m in self.model.named_modules()}
        return names[id(self.model.get_input_embeddings())], ""

    def token_embeddings(self, src: Tensor, tgt: Tensor) -> tuple[Tensor, ...]:
        return (self.model.get_input_embeddings()(src),)

    def teacher_logits(self, network: nn.Module, src: Tensor, tgt: Tensor | None = None) -> Tensor:
        return network(**self._inputs(src), return_dict=True).logits

    def translate(self, texts: Sequence[str]) -> list[str]:
        raise HFModelError(f"{self.name} is an encoder-only model: it predicts at its masks (fill) and does not "
                           "translate")

    def residual_layers(self) -> dict[str, list[nn.Module]]:
        return {"encoder": self._layers()}

    def encoder_final_norm(self, residual: Tensor) -> Tensor:
        raise ValueError(f"{self.name} is an encoder-only model: no decoder reads its encoder")

    def encode_at(self, src: Tensor, layer: int, head_mask: HeadMask | None = None) -> EncoderOutput:
        raise ValueError(f"{self.name} is an encoder-only model: no decoder reads its encoder")
