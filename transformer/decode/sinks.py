"""Hide attention sinks: the first token and special tokens taken off the key axis, every row renormalised.

Long inputs and large models put most of many rows' weight on the first token or on </s> (an "attention sink"),
which washes out everything else on a linear colour scale. The hidden columns stay in place (so positions and
labels do not move) with weight 0; the trace records them, charts grey them and say so, and the JSON keeps them.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import torch
from torch import Tensor

from ..model import SOURCE, TARGET
from .trace import AttentionTrace
from .words import _is_special


def sink_positions(tokens: Sequence[str], *, first: bool = True, specials: bool = True) -> tuple[int, ...]:
    """Positions to hide: 0 with `first`, every special-shaped token (<s>, </s>, <pad>, [CLS]...) with `specials`."""
    picked = {i for i, t in enumerate(tokens) if specials and _is_special(t)}
    if first and tokens:
        picked.add(0)
    return tuple(sorted(picked))


def _renormalised(weights: Tensor, hidden: Sequence[int]) -> Tensor:
    """weights (..., Q, K) with the hidden key columns 0 and each row rescaled to sum to 1 (a row left with
    nothing, like the first decoder row when <s> is hidden, stays all 0)."""
    if not hidden:
        return weights
    w = weights.clone()
    w[..., list(hidden)] = 0.0
    total = w.sum(-1, keepdim=True)
    return torch.where(total > 0, w / total.clamp(min=1e-30), torch.zeros_like(w))


def hide_tokens(trace: AttentionTrace, *, first: bool = True, specials: bool = True) -> AttentionTrace:
    """The trace with the first token and/or special tokens hidden from every key axis, rows renormalised."""
    src = tuple(sorted(set(trace.hidden_source) | set(sink_positions(trace.source_tokens, first=first,
                                                                      specials=specials))))
    tgt = tuple(sorted(set(trace.hidden_target) | set(sink_positions(trace.decoder_input_tokens, first=first,
                                                                      specials=specials))))
    hidden = {SOURCE: src, TARGET: tgt}
    axes = trace.family.axes
    maps = {kind: _renormalised(trace.weights(kind), hidden[axes[kind][1]]) for kind in trace.kinds}
    return replace(trace, maps=maps, hidden_source=src, hidden_target=tgt)


def hidden_note(trace: AttentionTrace, kind: str | None = None) -> str:
    """What a chart says beside a map whose keys were hidden, e.g. "keys hidden: <s>, </s> · rows renormalised";
    "" when nothing is hidden (for `kind`'s key axis, or any axis when kind is None)."""
    if kind is None:
        parts = [(trace.source_tokens, trace.hidden_source), (trace.decoder_input_tokens, trace.hidden_target)]
    else:
        keys = trace.labels(kind)[1]
        parts = [(keys, trace.hidden_target if trace.family.axes[kind][1] == TARGET else trace.hidden_source)]
    names = [tokens[i] for tokens, hidden in parts for i in hidden]
    if not names:
        return ""
    shown = ", ".join(dict.fromkeys(names))
    return f"keys hidden: {shown} · rows renormalised"


def hidden_dict(trace: AttentionTrace) -> dict[str, list[int]]:
    """The "hidden_keys" block of the trace JSON: 0-based source and target positions taken off the key axes."""
    return {"source": list(trace.hidden_source), "target": list(trace.hidden_target)}
