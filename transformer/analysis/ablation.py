"""Head ablation: switch attention heads off through the head mask passed with the call, never on the model.

Ablating a head means its contribution to its attention output is zero: the head's slice of the concatenated
head outputs is multiplied by 0 before the output projection (same rule for every kind). The mask travels with
each call, so a model shared by many sessions never carries one session's ablation into another's decode.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import pandas as pd
import torch
from torch import Tensor

from ..data import START_ID, Tokenizer
from ..decode import UNEMITTABLE, KINDS, DecodeResult, InputError, ban, encode_source, eval_mode, greedy_decode
from ..model import HeadMask, Seq2SeqTransformer

KIND_CODES = {"enc": "encoder_self", "dec": "decoder_self", "cross": "cross"}
_LABEL = re.compile(r"^\s*(enc|dec|cross)\s*[:\s]\s*L(\d+)\s*H(\d+)\s*$", re.IGNORECASE)


class HeadError(ValueError):
    """A head that the model does not have, or a head label that cannot be read."""


@dataclass(frozen=True, order=True)
class Head:
    """One attention head: kind ("encoder_self", "decoder_self", "cross"), 0-based layer and head."""

    kind: str
    layer: int
    head: int

    @property
    def label(self) -> str:
        """'cross:L1H2' for (cross, layer 0, head 1): 1-based, the form the CLI and the app read back."""
        code = next(c for c, k in KIND_CODES.items() if k == self.kind)
        return f"{code}:L{self.layer + 1}H{self.head + 1}"


def n_layers(model: Seq2SeqTransformer, kind: str) -> int:
    """Layers of a kind in the model: encoder layers for encoder self-attention, decoder layers otherwise."""
    return model.cfg.n_encoder_layers if kind == "encoder_self" else model.cfg.n_decoder_layers


def all_heads(model: Seq2SeqTransformer, kinds: Sequence[str] = KINDS) -> list[Head]:
    """Every head of the given kinds, in (kind, layer, head) order."""
    return [Head(kind, layer, head) for kind in kinds for layer in range(n_layers(model, kind))
            for head in range(model.cfg.n_heads)]


def check_head(model: Seq2SeqTransformer, head: Head) -> Head:
    """The head itself, or HeadError naming what the model has."""
    if head.kind not in KINDS:
        raise HeadError(f"unknown attention kind {head.kind!r}; expected one of {', '.join(KINDS)}")
    layers, heads = n_layers(model, head.kind), model.cfg.n_heads
    if not 0 <= head.layer < layers:
        raise HeadError(f"{head.label}: the model has {layers} {head.kind.replace('_', ' ')} layer(s), "
                        f"numbered 1 to {layers}")
    if not 0 <= head.head < heads:
        raise HeadError(f"{head.label}: the model has {heads} head(s) per layer, numbered 1 to {heads}")
    return head


def parse_head(text: str, model: Seq2SeqTransformer) -> Head:
    """A head from its label ('cross:L1H2', 'enc:L2H1', 'dec:L1H4'; 1-based), checked against the model."""
    match = _LABEL.match(text or "")
    if match is None:
        raise HeadError(f"cannot read head {text!r}: write KIND:LnHm with KIND enc, dec or cross (e.g. cross:L1H2)")
    code, layer, head = match.groups()
    return check_head(model, Head(KIND_CODES[code.lower()], int(layer) - 1, int(head) - 1))


def head_mask(model: Seq2SeqTransformer, heads: Iterable[Head]) -> HeadMask | None:
    """The head mask switching `heads` off (None when there is none): kind -> (layers, heads) of 0/1."""
    heads = [check_head(model, h) for h in heads]
    if not heads:
        return None
    mask = {kind: torch.ones(n_layers(model, kind), model.cfg.n_heads) for kind in {h.kind for h in heads}}
    for h in heads:
        mask[h.kind][h.layer, h.head] = 0.0
    return mask


def ablated_decode(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, text: str,
                   heads: Sequence[Head], *, top_k: int = 5) -> DecodeResult:
    """Greedy decoding with `heads` switched off (raises HeadError for an empty selection or a missing head)."""
    if not heads:
        raise HeadError("no head selected: choose at least one head to switch off")
    return greedy_decode(model, src_tokenizer, tgt_tokenizer, text, top_k=top_k,
                         head_mask=head_mask(model, heads))


def comparison_frame(intact: DecodeResult, ablated: DecodeResult) -> pd.DataFrame:
    """Per step: the intact and the ablated chosen token and probability, and whether they differ."""
    rows = []
    for t in range(max(len(intact.steps), len(ablated.steps))):
        a = intact.steps[t] if t < len(intact.steps) else None
        b = ablated.steps[t] if t < len(ablated.steps) else None
        rows.append({"step": t + 1, "intact": a.token if a else "", "intact_prob": a.prob if a else None,
                     "ablated": b.token if b else "", "ablated_prob": b.prob if b else None,
                     "differs": a is None or b is None or a.token_id != b.token_id})
    return pd.DataFrame(rows)


def output_log_prob(model: Seq2SeqTransformer, src: Tensor, tgt_in: Tensor, targets: Tensor,
                    mask: HeadMask | None = None) -> float:
    """Sum of log p(targets) teacher-forced on `tgt_in` (1, T), optionally with heads switched off."""
    with eval_mode(model):
        logits, _ = model.forward_with_attention(src, tgt_in, mask)  # (1, T, V)
        logp = ban(logits[0].float(), UNEMITTABLE).log_softmax(-1)  # as decoding sees them: <pad>, <s> never chosen
        return float(logp.gather(-1, targets[:, None]).sum())


def output_ids(result: DecodeResult) -> list[int]:
    """The ids a decode produced (with </s> when it finished): what the sweep teacher-forces on."""
    return [s.token_id for s in result.steps]


@dataclass(frozen=True)
class Sweep:
    """Drop in the output's log-probability when each head is switched off in turn."""

    frame: pd.DataFrame  # kind, layer, head, label, log_prob, drop; one row per head swept, largest drop first
    base_log_prob: float
    complete: bool  # False when the time cap stopped the sweep early
    seconds: float


ProgressFn = Callable[[int, int], None]


def sweep_heads(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, text: str, output: Sequence[int], *,
                kinds: Sequence[str] = KINDS, time_cap: float | None = None,
                progress: ProgressFn | None = None) -> Sweep:
    """Ablate each head in turn; per head the drop in log p(output | text) teacher-forced on `output` (ids)."""
    src, _ = encode_source(model, src_tokenizer, text)
    if not output:
        raise InputError("The model produced no output for this input, so there is nothing to score.")
    if len(output) > model.cfg.max_len:
        raise InputError(f"The output has {len(output)} tokens; this model reads at most {model.cfg.max_len}.")
    src_t = torch.tensor([src])
    targets = torch.tensor(list(output))
    tgt_in = torch.tensor([[START_ID, *output[:-1]]])
    start = time.perf_counter()
    base = output_log_prob(model, src_t, tgt_in, targets)
    heads = all_heads(model, kinds)
    rows = []
    for i, h in enumerate(heads):
        if time_cap is not None and time.perf_counter() - start > time_cap:
            break
        lp = output_log_prob(model, src_t, tgt_in, targets, head_mask(model, [h]))
        rows.append({"kind": h.kind, "layer": h.layer, "head": h.head, "label": h.label, "log_prob": lp,
                     "drop": base - lp})
        if progress is not None:
            progress(i + 1, len(heads))
    frame = pd.DataFrame(rows, columns=["kind", "layer", "head", "label", "log_prob", "drop"])
    frame = frame.sort_values("drop", ascending=False, kind="stable").reset_index(drop=True)
    return Sweep(frame, base, len(rows) == len(heads), time.perf_counter() - start)

