"""What masking does to an encoder-only model's attention, which tokens its prediction at a mask leans on, and a
sentence pair's segment blocks of any map.

- `attention_change`: per head, how far each query's attention moved when tokens were masked: the mean over query
  rows of the total variation distance 0.5 * sum_k |a_qk - b_qk| (0: the same weights, 1: disjoint).
- `segment_filter`: the weights of one block of a pair (A→A, B→B, A→B, B→A; rows are queries), the rest 0; the
  weights are the model's own, not renormalised, so a block's row sum is the share of attention it gets.
- `mask_attribution`: gradient x input of the log-probability of a token at a mask, per input token (summed over
  the embedding's dimensions), from the model's own forward with the embeddings it computes.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from ...adapters import InspectableModel
from ...decode import AttentionTrace

SEGMENT_FILTERS = ("all", "A→A", "B→B", "A→B", "B→A")


def attention_change(before: AttentionTrace, after: AttentionTrace) -> pd.DataFrame:
    """kind, layer, head, change: the mean total variation distance between the two traces' rows, per head; the
    traces must have the same kinds and shapes (masking replaces a token by the mask, one for one)."""
    rows = []
    for kind in before.kinds:
        a, b = before.weights(kind).float(), after.weights(kind).float()
        if a.shape != b.shape:
            raise ValueError(f"{kind}: the two traces' maps differ in shape ({tuple(a.shape)} vs {tuple(b.shape)})")
        change = 0.5 * (a - b).abs().sum(-1).mean(-1)  # (L, H)
        for layer in range(change.shape[0]):
            for head in range(change.shape[1]):
                rows.append({"kind": kind, "layer": layer, "head": head, "change": float(change[layer, head])})
    return pd.DataFrame(rows, columns=["kind", "layer", "head", "change"])


def segment_filter(trace: AttentionTrace, segments: Sequence[int], which: str) -> AttentionTrace:
    """The trace with only `which` block of every kind kept ("A→B": queries in sentence A, keys in sentence B)."""
    if which not in SEGMENT_FILTERS:
        raise ValueError(f"unknown segment filter {which!r}; expected one of {', '.join(SEGMENT_FILTERS)}")
    if which == "all":
        return trace
    seg = torch.tensor(list(segments))
    q_seg, k_seg = ("AB".index(which[0]), "AB".index(which[-1]))
    maps = {}
    for kind in trace.kinds:
        w = trace.weights(kind)
        if w.shape[-2:] != (len(seg), len(seg)):
            raise ValueError(f"{len(seg)} segments for a {kind} map of {w.shape[-2]} x {w.shape[-1]} tokens")
        keep = (seg == q_seg)[:, None] & (seg == k_seg)[None, :]
        maps[kind] = w * keep
    return AttentionTrace(
        trace.source_tokens, trace.decoder_input_tokens, maps=maps, family=trace.family,
        head_groups=trace.head_groups, step_offset=trace.step_offset, hidden_source=trace.hidden_source,
        hidden_target=trace.hidden_target)


def mask_attribution(adapter: InspectableModel, ids: Sequence[int], position: int, token_id: int) -> list[float]:
    """Gradient x input of log p(token_id at `position`) for each input token, as a share of their absolute sum."""
    src = torch.tensor([list(ids)])
    embedding = adapter.network.get_submodule(adapter.embedding_paths()[0])
    kept: list[torch.Tensor] = []

    def keep(module: torch.nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
        out.retain_grad()
        kept.append(out)
        return out

    with adapter.differentiable():
        handle = embedding.register_forward_hook(keep)
        try:
            logits = adapter.teacher_logits(adapter.network, src, None)  # type: ignore[arg-type]  # encoder-only: no target
        finally:
            handle.remove()
        logp = logits[0, position].float().log_softmax(-1)[token_id]
        logp.backward()
    emb = kept[0]
    assert emb.grad is not None  # the embedding output kept its gradient (retain_grad)
    scores = (emb.grad * emb.detach()).sum(-1)[0].abs()  # (S,)
    total = float(scores.sum())
    return [float(s) / total if total > 0 else 0.0 for s in scores]
