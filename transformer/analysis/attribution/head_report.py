"""One input's head report (importance sweep and attention/attribution agreement), and its average over inputs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import pandas as pd
import torch

from ...adapters import InspectableModel
from ...decode import AttentionTrace, DecodeResult, greedy_decode
from ..patching.ablation import Sweep, output_ids
from ..patching.head_effects import attribute_in_chunks, sweep_heads
from ..patching.head_sweep import Progress
from .agreement import agreement_frame, agreement_summary
from .attribution import IG_STEPS, Attribution

AGREEMENT_KINDS = ("cross", "decoder_self")


@dataclass(frozen=True)
class HeadReport:
    """The greedy output of one input, the drop per head when ablated, and per cross and decoder self-attention head
    the agreement of its attention with attribution."""

    result: DecodeResult
    sweep: Sweep
    agreement: pd.DataFrame | None  # agreement_frame columns and "kind"; None when not asked for


def head_report(adapter: InspectableModel, text: str, *, agreement: bool = True, ig_steps: int = IG_STEPS,
                method: str = "integrated_gradients", time_cap: float | None = None, progress: Progress | None = None,
                dtype: torch.dtype | None = None, max_steps: int | None = None) -> HeadReport:
    """Decode `text` greedily, sweep every head on that output, and (optionally) compare attention with attribution
    (`method`: Integrated Gradients with `ig_steps` points, or gradient x input).

    `progress` gets the fraction done (the sweep is the first half when agreement is asked for) and may raise
    `Cancelled`; `dtype=torch.bfloat16` runs the sweep in bf16 (`bf16_bound`); `max_steps` caps the output."""
    result = greedy_decode(adapter, text, top_k=1, max_steps=max_steps)
    out = output_ids(result)
    share = 0.5 if agreement else 1.0
    sweep = sweep_heads(adapter, text, out, time_cap=time_cap, dtype=dtype,
                        on_fraction=None if progress is None else (lambda f: progress(share * f)))
    frame = None
    if agreement:
        attributions = attribute_in_chunks(adapter, text, out, n_steps=ig_steps, method=method,
                                           progress=None if progress is None else (lambda f: progress(0.5 + 0.5 * f)))
        frame = agreement_frames(result.trace, attributions)
    return HeadReport(result, sweep, frame)


def agreement_frames(trace: AttentionTrace, attributions: Sequence[Attribution]) -> pd.DataFrame:
    """agreement_frame of cross-attention and of decoder self-attention, one frame with a "kind" column (no decoder
    self-attention rows for an output of a single step: there is nothing to rank)."""
    family = trace.family
    if not family.has_cross:  # a decoder-only model: its one kind against the prompt and earlier outputs
        assert family.decoder_kind is not None  # attributions come from a decode
        kinds: tuple[str, ...] = (family.decoder_kind,)
    else:
        kinds = AGREEMENT_KINDS if any(a.step >= 1 for a in attributions) else ("cross",)
    return pd.concat([agreement_frame(trace.weights(kind), attributions, kind, trace.step_offset).assign(kind=kind)
                      for kind in kinds], ignore_index=True)


def average_drops(sweeps: Sequence[Sweep]) -> pd.DataFrame:
    """Mean drop per head over several inputs (heads every sweep reached), largest first."""
    frame = pd.concat([s.frame for s in sweeps], ignore_index=True)
    mean = frame.groupby(["kind", "layer", "head", "label"], as_index=False)["drop"].mean()
    return mean.sort_values("drop", ascending=False, kind="stable").reset_index(drop=True)


def average_agreement(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Mean Spearman and top-1 match per head (cross and decoder self) over several inputs."""
    frame = pd.concat(frames, ignore_index=True)
    return frame.groupby(["kind", "layer", "head", "label"], as_index=False)[["spearman", "top1"]].mean()


def _agreement_block(frame: pd.DataFrame, code: str) -> dict[str, Any]:
    per_head = frame[frame["head"] >= 0]
    best = agreement_summary(frame)
    return {"heads": [{"label": f"{code}:{r.label}", "spearman": round(float(r.spearman), 4),
                       "top1": round(float(r.top1), 4)} for r in per_head.itertuples()],
            "best": {**best, "best_head": f"{code}:{best['best_head']}"}}


def report_dict(drops: pd.DataFrame, agreement: pd.DataFrame | None,
                method: str = "integrated_gradients") -> dict[str, Any]:
    """The JSON block of `heads`: heads ranked by drop (1-based layer and head) and the agreement per head."""
    heads = [{"label": r.label, "kind": r.kind, "layer": int(r.layer) + 1, "head": int(r.head) + 1,
              "drop": round(float(r.drop), 6)} for r in drops.itertuples()]
    out: dict[str, Any] = {"heads": heads, "most_important": heads[0]["label"] if heads else None}
    if agreement is not None:
        # "heads" and "best": cross-attention against the source attribution; "decoder_self": decoder
        # self-attention against the attribution to the decoder inputs (steps 2 on), when any output had two steps
        primary = "cross" if (agreement["kind"] == "cross").any() else "self"
        out["agreement"] = {"method": method, **({"baseline": "zero token embeddings, positions kept"}
                                                 if method == "integrated_gradients" else {}),
                            **_agreement_block(agreement[agreement["kind"] == primary], primary)}
        decoder_self = agreement[agreement["kind"] == "decoder_self"]
        if not decoder_self.empty:
            out["agreement"]["decoder_self"] = {**_agreement_block(decoder_self, "dec"),
                                                "compared_with": "attribution to the decoder inputs, steps 2 on"}
    return out
