"""The head overview: one row per (kind, layer, head) with every per-head statistic the studio knows.

Statistics that need extra work (alignment with a gold alignment, an ablation sweep, attribution agreement) are
filled in when their results are passed in, and left NaN otherwise, so a chart can offer only what exists.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ...data import GoldSource
from ...decode import KINDS, MEAN_HEAD, AttentionTrace, head_label
from .alignment import alignment_scores
from .statistics import head_stats

STATISTICS = {  # column -> (title, higher is "more")
    "entropy": "entropy (nats)",
    "max_weight": "max weight",
    "diag_distance": "distance from the diagonal",
    "alignment": "alignment with gold",
    "drop": "ablation effect (drop in log p)",
    "spearman": "attribution agreement (Spearman)",
}
SIGNED_STATISTICS = frozenset({"drop", "spearman"})  # a sign that matters: diverging colours
OVERVIEW_COLUMNS = ("kind", "layer", "head", "label", *STATISTICS)


def head_overview_frame(trace: AttentionTrace, kinds: Sequence[str] = KINDS, *,
                        gold: Sequence[GoldSource] | None = None, sweep: pd.DataFrame | None = None,
                        agreement: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (kind, layer, head) of the trace (no mean-over-heads rows), columns `OVERVIEW_COLUMNS`.

    `gold`: a gold alignment of the output (fills "alignment" for cross heads); `sweep`: a `Sweep.frame`
    (kind, layer, head, drop); `agreement`: `agreement_frames` output (kind, layer, head, spearman).
    """
    frames = []
    for kind in kinds:
        stats = head_stats(trace, kind)
        stats = stats[stats["head"] != MEAN_HEAD].copy()
        stats.insert(0, "kind", kind)
        if gold is not None and kind == "cross":
            scores = alignment_scores(trace, gold)[["layer", "head", "score"]].rename(columns={"score": "alignment"})
            stats = stats.merge(scores, on=["layer", "head"], how="left")
        frames.append(stats)
    frame = pd.concat(frames, ignore_index=True)
    for extra, column in ((sweep, "drop"), (agreement, "spearman")):
        if extra is not None and not extra.empty:
            part = extra[extra["head"] != MEAN_HEAD][["kind", "layer", "head", column]]
            frame = frame.merge(part.astype({"layer": int, "head": int}), on=["kind", "layer", "head"], how="left")
    for column in STATISTICS:
        if column not in frame:
            frame[column] = np.nan
    frame["label"] = [head_label(int(h), int(layer), sep="")
                      for layer, h in zip(frame["layer"], frame["head"], strict=True)]
    return frame[list(OVERVIEW_COLUMNS)].astype({"layer": int, "head": int})


def available_statistics(frame: pd.DataFrame, kind: str) -> list[str]:
    """The statistics with at least one value for `kind` (what a picker should offer), in `STATISTICS` order."""
    rows = frame[frame["kind"] == kind]
    return [s for s in STATISTICS if s in rows and rows[s].notna().any()]
