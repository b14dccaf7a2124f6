"""One input's head report (importance sweep and attention/attribution agreement), and its average over inputs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import pandas as pd

from ..decode import DecodeResult, decode_greedy
from ..model import InspectableSeq2Seq
from .ablation import Sweep, output_ids, sweep_heads
from .agreement import agreement_frame, agreement_summary
from .attribution import IG_STEPS, attribute_steps


@dataclass(frozen=True)
class HeadReport:
    """The greedy output of one input, the drop per head when ablated, and per cross head the agreement."""

    result: DecodeResult
    sweep: Sweep
    agreement: pd.DataFrame | None  # agreement_frame columns; None when not asked for


def head_report(lm: InspectableSeq2Seq, text: str, *, agreement: bool = True, ig_steps: int = IG_STEPS,
                time_cap: float | None = None) -> HeadReport:
    """Decode `text` greedily, sweep every head on that output, and (optionally) compare attention with IG."""
    result = decode_greedy(lm, text, top_k=1)
    out = output_ids(result)
    sweep = sweep_heads(lm, text, out, time_cap=time_cap)
    frame = None
    if agreement:
        frame = agreement_frame(result.trace.cross, attribute_steps(lm, text, out, n_steps=ig_steps))
    return HeadReport(result, sweep, frame)


def average_drops(sweeps: Sequence[Sweep]) -> pd.DataFrame:
    """Mean drop per head over several inputs (heads every sweep reached), largest first."""
    frame = pd.concat([s.frame for s in sweeps], ignore_index=True)
    mean = frame.groupby(["kind", "layer", "head", "label"], as_index=False)["drop"].mean()
    return mean.sort_values("drop", ascending=False, kind="stable").reset_index(drop=True)


def average_agreement(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Mean Spearman and top-1 match per cross head over several inputs."""
    frame = pd.concat(frames, ignore_index=True)
    return frame.groupby(["layer", "head", "label"], as_index=False)[["spearman", "top1"]].mean()


def report_dict(drops: pd.DataFrame, agreement: pd.DataFrame | None) -> dict[str, Any]:
    """The JSON block of `heads`: heads ranked by drop (1-based layer and head) and the agreement per cross head."""
    heads = [{"label": r.label, "kind": r.kind, "layer": int(r.layer) + 1, "head": int(r.head) + 1,
              "drop": round(float(r.drop), 6)} for r in drops.itertuples()]
    out: dict[str, Any] = {"heads": heads, "most_important": heads[0]["label"] if heads else None}
    if agreement is not None:
        per_head = agreement[agreement["head"] >= 0]
        out["agreement"] = {
            "method": "integrated_gradients", "baseline": "zero token embeddings, positions kept",
            "heads": [{"label": f"cross:{r.label}", "spearman": round(float(r.spearman), 4),
                       "top1": round(float(r.top1), 4)} for r in per_head.itertuples()],
            "best": {**agreement_summary(agreement),
                     "best_head": f"cross:{agreement_summary(agreement)['best_head']}"},
        }
    return out
