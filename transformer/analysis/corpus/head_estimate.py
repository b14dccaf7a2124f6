"""One head's one-pass ablation estimate as the head finder has it: its point on the finder's `estimate` axis
(`head_finder_frame` over a `CorpusEstimate`) with what the mean is over, or n/a and why, for the head's page."""
from __future__ import annotations

from dataclasses import dataclass

from ...model import Head
from .corpus_estimate import CorpusEstimate
from .corpus_stats import CorpusStats
from .head_finder import FINDER_COLUMNS, head_finder_frame

ESTIMATE = "estimate"  # the finder's column name, shown as the number's name on a head's page


@dataclass(frozen=True)
class HeadEstimate:
    """A head's `estimate` (None: n/a) and what it is over (the finder's caption), or why it is n/a."""

    value: float | None
    note: str

    @property
    def shown(self) -> str:
        """The value as the finder's table and tooltip print it (3 decimals), or "n/a"."""
        return "n/a" if self.value is None else f"{self.value:.3f}"

    def text(self) -> str:
        """One line: the name, the value, its definition and what it is over (or n/a and why)."""
        if self.value is None:
            return f"{ESTIMATE}: n/a ({self.note})"
        return f"{ESTIMATE}: {self.shown}, the {FINDER_COLUMNS[ESTIMATE]}; {self.note}"


def head_estimate(stats: CorpusStats, head: Head, estimate: CorpusEstimate | None, why: str) -> HeadEstimate:
    """The head's value in the finder's frame for these statistics and `estimate` (the same number as its point),
    with the estimate's caption; n/a with `why` when there is no estimate, or when it has no value for the head."""
    if estimate is None:
        return HeadEstimate(None, why)
    frame = head_finder_frame(stats, estimate=estimate.frame)
    row = frame[(frame["kind"] == head.kind) & (frame["layer"] == head.layer) & (frame["head"] == head.head)]
    if row.empty or row[ESTIMATE].isna().iloc[0]:
        return HeadEstimate(None, f"the estimate over these sentences has no value for {head.label}")
    return HeadEstimate(float(row[ESTIMATE].iloc[0]), estimate.caption())
