"""The head finder's numbers: one row per head of every kind with its corpus statistics (corpus_stats.py, under
their names), the one-pass ablation estimate where one was kept, and the long-range detectors' induction and
retrieval scores (causal self-attention only; NaN for the other kinds) and pattern label (patterns.py)."""
from __future__ import annotations

import pandas as pd

from ...model import Head
from ..heads.long_range import LongRange
from .corpus_stats import STATISTICS as CORPUS_STATISTICS
from .corpus_stats import CorpusStats

FINDER_COLUMNS = {
    **CORPUS_STATISTICS,
    "estimate": "estimated drop in log p(output) when the head is switched off (one-pass attribution patching)",
    "induction": "induction score on random tokens repeated (causal self-attention only)",
    "retrieval": "retrieval score: share of copy events at a needle (Wu et al. 2024; causal self-attention only)",
}
NOMINAL = ("kind", "pattern")  # colour fields that are names, not numbers


def head_finder_frame(stats: CorpusStats, *, estimate: pd.DataFrame | None = None,
                      long_range: LongRange | None = None) -> pd.DataFrame:
    """kind, layer, head, label (`Head.label`), every FINDER_COLUMNS value and `pattern` ("" where not run), one
    row per head in the statistics' order. `estimate`: a frame with kind, layer, head, estimate (NaN where none)."""
    frame = stats.frame.copy()
    frame.insert(3, "label", [Head(k, la, h).label for k, la, h in
                              zip(frame["kind"], frame["layer"], frame["head"], strict=True)])
    keys = ["kind", "layer", "head"]
    if estimate is not None:
        frame = frame.merge(estimate[[*keys, "estimate"]], on=keys, how="left")
    else:
        frame["estimate"] = float("nan")
    if long_range is not None:
        frame = frame.merge(long_range.frame[[*keys, "induction", "retrieval", "pattern"]], on=keys, how="left")
        frame["pattern"] = frame["pattern"].fillna("")
    else:
        frame["induction"] = frame["retrieval"] = float("nan")
        frame["pattern"] = ""
    return frame


def finder_table(frame: pd.DataFrame, sort: str = "max_weight", ascending: bool = False) -> pd.DataFrame:
    """The finder's heads as a table, sorted by a column (NaN last), the label first."""
    columns = ["label", "kind", "layer", "head", *[c for c in FINDER_COLUMNS if c in frame], "pattern"]
    table = frame[columns].sort_values(sort, ascending=ascending, na_position="last", kind="stable")
    return table.reset_index(drop=True)
