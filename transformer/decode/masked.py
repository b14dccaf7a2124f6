"""Predictions at the masks: what an encoder-only model (BERT, RoBERTa, DistilBERT, ModernBERT) puts at each mask
token of one input or sentence pair, with its top-k and the attention of that one forward pass.

The probabilities are the softmax of the masked-LM logits over the whole output vocabulary at each mask, exactly as
`AutoModelForMaskedLM` gives them (nothing left out, no temperature). A token can be masked by position (the
app's click) or typed as the model's own mask token; the trace's tokens are those the model read (masks included).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..adapters import InspectableModel, SourceText
from ..model import HeadMask
from .greedy import DecodeResult, InputError, Step, _check_text
from .trace import AttentionTrace

MAX_TOP_K = 100


@dataclass(frozen=True)
class MaskPrediction:
    """One mask: its position among the tokens, the token the user masked there (None: typed as the mask token),
    and the top-k (token, id, probability), best first."""

    position: int
    original: str | None
    top_k: tuple[tuple[str, int, float], ...]

    @property
    def token(self) -> str:
        return self.top_k[0][0]

    @property
    def prob(self) -> float:
        return self.top_k[0][2]


@dataclass(frozen=True)
class FillResult:
    """One forward pass of an encoder-only model over an input with masks: the predictions and the trace."""

    text: str
    second: str  # the pair's second sentence ("" for one sentence)
    source: SourceText  # what the model read: ids and tokens, masks in place
    segments: tuple[int, ...]  # 0 (sentence A) or 1 (sentence B) per token
    predictions: tuple[MaskPrediction, ...]
    trace: AttentionTrace = field(repr=False)

    @property
    def filled_text(self) -> str:
        """The input's tokens with each mask replaced by its best prediction (pieces as the tokenizer spells them)."""
        tokens = list(self.source.tokens)
        for p in self.predictions:
            tokens[p.position] = p.token
        return " ".join(tokens)

    def as_decode(self) -> DecodeResult:
        """This pass as the `DecodeResult` every view of a decode reads: one step per mask (its best prediction and
        top-k), the trace of the one forward pass, the input with each mask filled as the output; mode "masked"."""
        steps = tuple(Step(p.token, p.top_k[0][1], p.prob, tuple((t, v) for t, _, v in p.top_k))
                      for p in self.predictions)
        return DecodeResult(self.text if not self.second else f"{self.text} / {self.second}", steps, self.trace,
                            "masked", True, self.filled_text, self.source.unknown)

    def to_dict(self) -> dict:
        """The fill JSON (docs/formats.md, "Fill JSON"): the trace JSON's fields for the tokens and every kind's
        maps, and the predictions at each mask."""
        return {
            "family": self.trace.family_name,
            "kinds": list(self.trace.kinds),
            "head_groups": {k: list(v) for k, v in self.trace.head_groups.items()},
            "source_text": self.text,
            "second_text": self.second,
            "mode": "masked",
            "source_tokens": list(self.source.tokens),
            "source_ids": list(self.source.ids),
            "segments": list(self.segments),
            "target_tokens": [],
            "predictions": [{"position": p.position, "masked": p.original,
                             "top_k": [{"token": t, "id": i, "prob": v} for t, i, v in p.top_k]}
                            for p in self.predictions],
            "attention": self.trace.attention_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


def no_mask_message(adapter: InspectableModel) -> str:
    """What to say about an input with nothing to predict."""
    return (f"The input has no {getattr(adapter, 'mask_token', 'mask')} token: type "
            f"{getattr(adapter, 'mask_token', 'it')} where a word should be predicted, or pick a token to mask.")


def read_masked(adapter: InspectableModel, text: str, second: str = "", mask_positions: Sequence[int] = ()
                ) -> tuple[SourceText, tuple[int, ...], dict[int, str]]:
    """The input as the model reads it with the tokens at `mask_positions` masked, its segments, and the masked
    positions' original tokens; raises InputError for an empty, too long or wrong-family input or a bad position."""
    if adapter.family.decodes or not hasattr(adapter, "mask_id"):
        article = "an" if adapter.family.name[0] in "aeiou" else "a"
        raise InputError(f"{adapter.name} is {article} {adapter.family.name} model: predictions at masks need an "
                         "encoder-only model (BERT, RoBERTa, DistilBERT, ModernBERT)")
    masked_lm: Any = adapter  # an encoder-only adapter (checked above): its pairs, segments and mask id
    _check_text(text, adapter)
    if second:
        _check_text(second, adapter)
    source = masked_lm.tokenize_pair(text, second) if second else adapter.tokenize_source(text)
    if len(source.ids) > adapter.max_source_len:
        what = "The sentence pair has" if second else "The input has"
        raise InputError(f"{what} {len(source.ids):,} tokens with its special tokens; this model reads at most "
                         f"{adapter.max_source_len}.")
    special = set(masked_lm.special_ids) - {masked_lm.mask_id}
    ids, originals = list(source.ids), {}
    for pos in sorted({int(p) for p in mask_positions}):
        if not 0 <= pos < len(ids):
            raise InputError(f"Token {pos} does not exist: the input has tokens 0 to {len(ids) - 1}.")
        if ids[pos] in special:
            raise InputError(f"{source.tokens[pos]!r} is a special token: only the text's own tokens can be masked.")
        if ids[pos] != masked_lm.mask_id:
            originals[pos] = source.tokens[pos]
            ids[pos] = masked_lm.mask_id
    masked = SourceText(tuple(ids), tuple(adapter.ids_to_tokens(ids)), source.unknown,
                        source.n_specials)
    return masked, masked_lm.segments(ids), originals


def fill_masks(adapter: InspectableModel, text: str, second: str = "", *, mask_positions: Sequence[int] = (),
               top_k: int = 5, head_mask: HeadMask | None = None) -> FillResult:
    """The model's predictions at every mask of `text` (and `second`, a pair), masking `mask_positions` first,
    with the top-k of each and the trace of the forward pass; no mask gives no predictions (`no_mask_message`)."""
    if not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise InputError(f"top-k must be an integer between 1 and {MAX_TOP_K}, got {top_k!r}.")
    source, segments, originals = read_masked(adapter, text, second, mask_positions)
    src = torch.tensor([source.ids])
    masked_lm: Any = adapter  # read_masked checked it is encoder-only: its forward takes no target
    with adapter.running():
        out = masked_lm.forward(src, None, head_mask)
    positions = [i for i, t in enumerate(source.ids) if t == masked_lm.mask_id]
    predictions = []
    if positions:
        probs = out.logits[0, positions].float().softmax(-1)  # (M, V)
        values, ids = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
        for row, pos in enumerate(positions):
            top = tuple((adapter.id_to_token(int(i)), int(i), float(v)) for v, i in zip(values[row], ids[row],
                                                                                        strict=True))
            predictions.append(MaskPrediction(pos, originals.get(pos), top))
    trace = AttentionTrace.from_maps(source.tokens, (), out.attentions, adapter.family, adapter.head_groups())
    return FillResult(text, second, source, segments, tuple(predictions), trace)


def masked_decode(adapter: InspectableModel, text: str, second: str = "", *, mask_positions: Sequence[int] = (),
                  top_k: int = 5, head_mask: HeadMask | None = None) -> DecodeResult:
    """`fill_masks` as the `DecodeResult` every view of a decode reads: one step per mask (its best prediction and
    top-k), the trace of the one forward pass, the input with each mask filled as the output; mode "masked"."""
    return fill_masks(adapter, text, second, mask_positions=mask_positions, top_k=top_k,
                      head_mask=head_mask).as_decode()
