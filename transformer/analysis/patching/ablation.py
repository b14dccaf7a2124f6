"""Head ablation: switch attention heads off through the head mask passed with the call, never on the model.

Ablating a head means its contribution to its attention output is zero: the head's slice of the concatenated
head outputs is multiplied by 0 before the output projection (same rule for every kind). The mask travels with
each call, so a model shared by many sessions never carries one session's ablation into another's decode.
Our models apply it inside their attention; Hugging Face models (`HFSeq2Seq`) apply it with forward pre-hooks on
the attention output projections, registered under the model's lock and removed in `finally`, so no other caller
runs the model while they are on. Everything here takes any `InspectableModel`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import pandas as pd
import torch
from torch import Tensor

from ...adapters import InspectableModel, ban
from ...decode import DecodeResult, InputError, greedy_decode, masked_decode, read_source
from ...model import Head, HeadError, HeadMask


def all_heads(adapter: InspectableModel, kinds: Sequence[str] | None = None) -> list[Head]:
    """Every head of the given kinds (the model's own by default), in (kind, layer, head) order."""
    counts = adapter.head_counts()
    kinds = adapter.family.kinds if kinds is None else kinds
    return [Head(kind, layer, head) for kind in kinds for layer in range(counts[kind][0])
            for head in range(counts[kind][1])]


def check_head(adapter: InspectableModel, head: Head) -> Head:
    """The head itself, or HeadError naming what the model has."""
    if head.kind not in adapter.family.kinds:
        raise HeadError(f"{head.label}: {adapter.family.name} models have no {head.kind.replace('_', ' ')} attention; "
                        f"their kinds are {', '.join(adapter.family.kinds)}")
    layers, heads = adapter.head_counts()[head.kind]
    if not 0 <= head.layer < layers:
        raise HeadError(f"{head.label}: the model has {layers} {head.kind.replace('_', ' ')} layer(s), "
                        f"numbered 1 to {layers}")
    if not 0 <= head.head < heads:
        raise HeadError(f"{head.label}: the model has {heads} head(s) per layer, numbered 1 to {heads}")
    return head


def parse_head(text: str, adapter: InspectableModel) -> Head:
    """A head from its label ('cross:L1H2', 'enc.L2H1', 'dec L1H4'; 1-based), checked against the model."""
    return check_head(adapter, Head.parse(text))


def head_mask(adapter: InspectableModel, heads: Iterable[Head]) -> HeadMask | None:
    """The head mask switching `heads` off (None when there is none): kind -> (layers, heads) of 0/1."""
    heads = [check_head(adapter, h) for h in heads]
    if not heads:
        return None
    counts = adapter.head_counts()
    mask = {kind: torch.ones(*counts[kind]) for kind in {h.kind for h in heads}}
    for h in heads:
        mask[h.kind][h.layer, h.head] = 0.0
    return mask


def ablated_decode(adapter: InspectableModel, text: str, heads: Sequence[Head], *, top_k: int = 5) -> DecodeResult:
    """Greedy decoding with `heads` switched off (raises HeadError for an empty selection or a missing head)."""
    if not heads:
        raise HeadError("no head selected: choose at least one head to switch off")
    if not adapter.family.decodes:  # an encoder-only model: its predictions at the masks with the heads off
        return masked_decode(adapter, text, top_k=top_k, head_mask=head_mask(adapter, heads))
    return greedy_decode(adapter, text, top_k=top_k, head_mask=head_mask(adapter, heads))


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


def output_log_prob(adapter: InspectableModel, src: Tensor, tgt_in: Tensor, targets: Tensor,
                    mask: HeadMask | None = None) -> float:
    """Sum of log p(targets) teacher-forced on `tgt_in` (1, start + T - 1), optionally with heads switched off.

    Scored as decoding sees the model: tokens it never emits (<pad>, <s>) excluded, before any generation rule."""
    with adapter.running():
        logits, _ = adapter.forward(src, tgt_in, mask)  # (1, positions, V)
    rows = logits[0, tgt_in.shape[1] - targets.shape[0]:].float()  # the rows that predict `targets`
    return float(ban(rows, sorted(adapter.unemittable_ids)).log_softmax(-1).gather(-1, targets[:, None]).sum())


def check_output(adapter: InspectableModel, output: Sequence[int], what: str = "score") -> None:
    """InputError when there is no output or it is longer than the decoder reads."""
    if not output:
        raise InputError(f"The model produced no output for this input, so there is nothing to {what}.")
    limit = adapter.max_target_len - len(adapter.start_ids) + 1
    if len(output) > limit:
        raise InputError(f"The output has {len(output)} tokens; this model reads at most {limit}.")


def teacher_inputs(adapter: InspectableModel, text: str, output: Sequence[int]) -> tuple[Tensor, Tensor]:
    """Source ids (1, S) of `text` and decoder inputs (1, T) that teacher-force `output`: the decoder prefix (start
    ids, or a decoder-only model's prompt) + output[:-1]."""
    source = read_source(adapter, text)
    inputs = [*adapter.decoder_prefix(source), *output[:-1]]
    if len(inputs) > adapter.max_target_len:
        raise InputError(f"The input and output have {len(inputs)} tokens; this model reads at most "
                         f"{adapter.max_target_len}.")
    return torch.tensor([source.ids]), torch.tensor([inputs])


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
