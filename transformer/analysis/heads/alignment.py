"""Alignment scores: how often each cross-attention head puts its highest weight on the gold source token.

A gold alignment gives, for each target token j, the source token index it translates, a tuple of equally
acceptable indices (sort: every copy of a repeated character, since the output cannot tell which one was taken),
or None. Row j of a teacher-forced cross-attention map is the query that predicts target token j, so a head
"hits" token j when argmax over the source of row j is gold[j] (or one of its indices). Scores are the fraction
of aligned target tokens hit. Frames follow the charts' convention: 0-based layer and head, head -1 (`MEAN_HEAD`)
for the mean of heads, and a 1-based `label` ("L1H2" is layer 1, head 2; "L1mean" the mean of layer 1's heads).
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import torch
from torch import Tensor

from ...data import GoldSource, make_batch
from ...decode import MEAN_HEAD, AttentionTrace
from ...model import Network, family_of_model
from .statistics import per_head_frame


def accepted(entry: GoldSource) -> tuple[int, ...]:
    """The source indices a gold entry accepts: () for None, one index for an int, else the tuple itself."""
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, int) else tuple(entry)


def alignment_hits(cross: Tensor, gold: Sequence[GoldSource]) -> tuple[Tensor, int]:
    """Hits per (layer, head + mean column) for one example's cross-attention (L, H, T, S), and how many tokens."""
    n_rows, n_src = cross.shape[2], cross.shape[3]
    rows = [j for j, g in enumerate(gold) if g is not None and j < n_rows]
    if not rows:
        return torch.zeros(cross.shape[0], cross.shape[1] + 1), 0
    ok = torch.zeros(len(rows), n_src + 1, dtype=torch.bool)  # (R, S + 1); the extra column takes indices >= S
    for r, j in enumerate(rows):
        ok[r, [min(i, n_src) for i in accepted(gold[j])]] = True
    maps = torch.cat([cross, cross.mean(1, keepdim=True)], dim=1)[:, :, rows]  # (L, H+1, R, S)
    picked = maps.argmax(-1)  # (L, H+1, R)
    hits = ok[torch.arange(len(rows)), picked].sum(-1).float()  # (L, H+1)
    return hits, len(rows)


def scores_frame(hits: Tensor, total: int) -> pd.DataFrame:
    """Tidy frame (layer, head, label, score) from summed hits; head -1 (MEAN_HEAD) is the mean over heads."""
    return per_head_frame(score=hits.double() / max(total, 1))


def alignment_scores(trace: AttentionTrace, gold: Sequence[GoldSource]) -> pd.DataFrame:
    """Per-head and head-mean alignment scores of one trace's cross-attention against a gold alignment; ValueError
    for a model without cross-attention (a decoder-only model: nothing aligns a target token to a source token)."""
    if not trace.family.has_cross:
        raise ValueError(f"{trace.family_name} models have no cross-attention: alignment scores need it")
    hits, total = alignment_hits(trace.cross, gold)
    return scores_frame(hits, total)


def gold_cells(gold: Sequence[GoldSource]) -> list[tuple[int, int]]:
    """(query row, key column) cells of a gold alignment, every acceptable one, for outlining on a heatmap."""
    return [(j, i) for j, g in enumerate(gold) for i in accepted(g)]


def summarize(frame: pd.DataFrame) -> dict[str, Any]:
    """The `alignment` block of `eval`: best head, its score, and the best layer's head-mean score."""
    heads = frame[frame["head"] != MEAN_HEAD]
    means = frame[frame["head"] == MEAN_HEAD]
    best = heads.loc[heads["score"].idxmax()]
    best_mean = means.loc[means["score"].idxmax()]
    return {"best": round(float(best["score"]), 4), "best_head": str(best["label"]),
            "head_mean": round(float(best_mean["score"]), 4), "head_mean_layer": int(best_mean["layer"]) + 1}


def evaluate_alignment(model: Network, examples: Sequence, src_tokenizer,
                       tgt_tokenizer, batch_size: int = 128) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """Teacher-forced alignment scores over examples with gold alignments; None when none has one, or when the
    model has no cross-attention (a decoder-only model)."""
    from ...model import eval_mode
    if not family_of_model(model).has_cross:
        return None
    aligned = [e for e in examples if e.alignment is not None]
    if not aligned:
        return None
    limit = model.cfg.max_len - 1
    device = next(model.parameters()).device
    total_hits, total = None, 0
    with eval_mode(model):
        for i in range(0, len(aligned), batch_size):
            chunk = aligned[i: i + batch_size]
            batch = make_batch([src_tokenizer.encode(e.source)[:limit] for e in chunk],
                               [tgt_tokenizer.encode(e.target)[:limit] for e in chunk]).to(device)
            _, maps = model.forward_with_attention(batch.src, batch.tgt_in)
            cross = torch.stack(maps.cross, dim=1).cpu()  # (B, L, H, T, S)
            for b, example in enumerate(chunk):
                hits, n = alignment_hits(cross[b], example.alignment)
                total_hits = hits if total_hits is None else total_hits + hits
                total += n
    assert total_hits is not None  # `aligned` is not empty
    frame = scores_frame(total_hits, total)
    return frame, summarize(frame)
