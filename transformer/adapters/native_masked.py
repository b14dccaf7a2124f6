"""`NativeEncoderOnly`: our encoder-only transformer (a masked LM, `transformer.model.EncoderOnlyTransformer`)
behind the interface `HFMaskedLM` answers: predictions at the masks, one bidirectional kind "encoder_self", its
residual stream "encoder", its masked-LM head as the output function.

The input is what it trained on (`transformer.data.masking`): a text, or a pair `A </s> B </s>` (two boxes, or
"</s>" typed between the sentences); `<mask>` typed in the text is the mask (the start token <s>, id 1, which the
model never reads otherwise). Segments come from the separator, as BERT's token types for a pair.
"""
from __future__ import annotations

from typing import Any, Sequence

from torch import Tensor, nn

from ..data import END_ID, MASK_ID, MASK_TOKEN, Tokenizer
from ..data.batching import PAD_ID
from ..model import ENCODER_ONLY, EncoderOnlyTransformer, EncoderOutput, ForwardOutput, HeadMask, Insides, StepOutput
from .capture import complete, recording_residuals
from .errors import HFModelError
from .interface import SourceText
from .native_base import NativeAdapter

SEPARATOR = "</s>"


class NativeEncoderOnly(NativeAdapter):
    """An encoder-only masked language model trained here, with its one joint tokenizer."""

    family = ENCODER_ONLY
    start_ids: tuple[int, ...] = ()
    end_ids = frozenset({END_ID})
    mask_id = MASK_ID
    mask_token = MASK_TOKEN
    unemittable_ids = frozenset({PAD_ID, MASK_ID})
    special_ids = frozenset({PAD_ID, MASK_ID, END_ID, 3})  # pad, <mask>, </s>, <unk>: never masked by a click
    model: EncoderOnlyTransformer

    def __init__(self, model: EncoderOnlyTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer | None = None,
                 name: str = "checkpoint", *, answer_steps: int | None = None) -> None:
        super().__init__(model, src_tokenizer, tgt_tokenizer or src_tokenizer, name, answer_steps=answer_steps)
        self.max_source_len = self.max_target_len = model.cfg.max_len

    # -- tokens ------------------------------------------------------------------------------------------------
    def _sentence(self, text: str) -> tuple[list[int], list[str]]:
        """Ids of one sentence, "<mask>" read as the mask wherever it is typed; and its unknown words."""
        ids: list[int] = []
        unknown: list[str] = []
        tok = self.src_tokenizer
        for i, part in enumerate(text.split(MASK_TOKEN)):
            if i:
                ids.append(MASK_ID)
            part_ids = tok.encode(part) if part.strip() else []
            unknown += [piece for piece, t in zip(tok.split(part), part_ids, strict=False) if t == tok.unk_id]
            ids += part_ids
        return ids, unknown

    def _read(self, sentences: Sequence[str]) -> SourceText:
        ids: list[int] = []
        unknown: list[str] = []
        for text in sentences:
            found, unk = self._sentence(text)
            ids += [*found, END_ID]
            unknown += unk
        if len(ids) == len(sentences):  # nothing but separators: no input
            return SourceText((), (), ())
        return SourceText(tuple(ids), tuple(self.ids_to_tokens(ids)), tuple(unknown), len(sentences))

    def tokenize_source(self, text: str) -> SourceText:
        """One sentence, or a pair written "A </s> B"; each sentence ends in </s>."""
        parts = text.split(SEPARATOR)
        if len(parts) > 1 and not parts[-1].strip():  # a closing </s> typed too
            parts.pop()
        return self._read([parts[0], " ".join(parts[1:])] if len(parts) > 1 else parts)

    def tokenize_pair(self, first: str, second: str) -> SourceText:
        """A sentence pair as the model trained on it: A </s> B </s>."""
        return self._read([first, second])

    def segments(self, ids: Sequence[int]) -> tuple[int, ...]:
        """Segment of each position, 0 (A, its </s> included) or 1 (B): what the model's segment embedding reads."""
        out, segment = [], 0
        for i in ids:
            out.append(segment)
            if int(i) == END_ID:
                segment = 1
        return tuple(out)

    def id_to_token(self, token_id: int) -> str:
        return MASK_TOKEN if int(token_id) == MASK_ID else self.tgt_tokenizer.id_to_token(token_id)

    def target_ids(self, text: str) -> list[int]:
        return self._sentence(text)[0]

    def default_max_steps(self, n_source: int) -> int:
        return 0

    def describe(self) -> dict[str, Any]:
        cfg = self.model.cfg
        return {"source": "checkpoint", "name": self.name, "family": self.family.name, "d_model": cfg.d_model,
                "n_heads": cfg.n_heads, "n_layers": cfg.n_encoder_layers, "context": cfg.max_len,
                "tgt_vocab_size": cfg.tgt_vocab_size, "parameters": self.model.num_parameters(),
                "mask_token": MASK_TOKEN}

    # -- compute -----------------------------------------------------------------------------------------------
    def _refuse(self) -> HFModelError:
        # the error every caller already turns into one line for an encoder-only model (HFMaskedLM raises it too)
        return HFModelError(f"{self.name} is an encoder-only model: it predicts at its masks (fill) and does not "
                            "decode")

    def encode(self, src: Tensor, head_mask: HeadMask | None = None) -> EncoderOutput:
        out = self.model.forward_with_attention(src, None, head_mask)
        return EncoderOutput(out.logits, out.attentions.encoder_self)

    def start_cache(self, encoded: EncoderOutput) -> Any:
        raise self._refuse()

    def step(self, token: Tensor, encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
             ) -> StepOutput:
        raise self._refuse()

    def forward(self, src: Tensor, tgt: Tensor | None = None, head_mask: HeadMask | None = None) -> ForwardOutput:
        """The masked-LM logits (1, S, V) at every input position and the self-attention; `tgt` is not read."""
        return self.model.forward_with_attention(src, None, head_mask)

    def insides(self, src: Tensor, tgt: Tensor | None = None, head_mask: HeadMask | None = None) -> Insides:
        """`forward` with every layer's softmax inputs and the residual stream "encoder"; `tgt` is not read."""
        layers = list(self.model.layers)
        with self.running(), self.capturing() as found, \
                recording_residuals({"encoder": layers}) as residual:
            out = self.model.forward_with_attention(src, None, head_mask)
        return Insides(out.logits, out.attentions, complete(found, self.name),
                       {k: tuple(v) for k, v in residual.items()})

    def attention_modules(self) -> dict[str, list[Any]]:
        return {"encoder_self": [layer.self_attn for layer in self.model.layers]}

    def output_projections(self) -> dict[str, list[nn.Module]]:
        return {"encoder_self": [layer.self_attn.out_proj for layer in self.model.layers]}

    def output_head(self, residual: Tensor) -> Tensor:
        """The final norm (pre-norm models; post-norm ones have none) and the masked-LM projection."""
        return self.model.generator(self.model.norm(residual))

    def residual_layers(self) -> dict[str, list[nn.Module]]:
        return {"encoder": list(self.model.layers)}

    def encoder_final_norm(self, residual: Tensor) -> Tensor:
        raise ValueError(f"{self.name} is an encoder-only model: no decoder reads its encoder")

    def encode_at(self, src: Tensor, layer: int, head_mask: HeadMask | None = None) -> EncoderOutput:
        raise ValueError(f"{self.name} is an encoder-only model: no decoder reads its encoder")

    def constrain(self, decoder_ids: Sequence[int], logits: Tensor, max_length: int) -> Tensor:
        return logits

    def translate(self, texts: Sequence[str]) -> list[str]:
        raise HFModelError(f"{self.name} is an encoder-only model: it predicts at its masks (fill) and does not "
                           "translate")

    # -- heads and gradients -------------------------------------------------------------------------------------
    def head_counts(self) -> dict[str, tuple[int, int]]:
        cfg = self.model.cfg
        return {"encoder_self": (cfg.n_encoder_layers, cfg.n_heads)}

    def embedding_paths(self) -> tuple[str, str]:
        """The token embedding the input goes through, and no decoder-side embedding ("")."""
        return "embed", ""

    def token_embeddings(self, src: Tensor, tgt: Tensor | None = None) -> tuple[Tensor, ...]:
        return (self.model.embed(src),)

    def teacher_logits(self, network: nn.Module, src: Tensor, tgt: Tensor | None = None) -> Tensor:
        return network(src)
