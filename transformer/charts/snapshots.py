"""Head specialisation over training: one corpus statistic per head of one kind at each weight snapshot
(`analysis.snapshot_curves`), a line a head."""
from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from ..decode import ALL_TITLES
from .style import AUTOSIZE


def snapshot_frame(curves: dict[str, Any], statistic: str, kind: str) -> pd.DataFrame:
    """Long form of `curves` for one statistic and kind: step, head label (L1H2), value."""
    rows = [{"step": step, "head": f"L{h['layer'] + 1}H{h['head'] + 1}", "value": value}
            for h in curves["heads"] if h["kind"] == kind
            for step, value in zip(curves["steps"], h[statistic], strict=True)]
    return pd.DataFrame(rows, columns=["step", "head", "value"])


def snapshot_curves_chart(curves: dict[str, Any], statistic: str, kind: str, *, width: int = 560) -> alt.Chart:
    """Each head's `statistic` over the training steps of the snapshots (a line a head, one colour each)."""
    data = snapshot_frame(curves, statistic, kind)
    if data.empty or data["value"].isna().all():
        raise ValueError(f"no {statistic} for {kind} heads in these curves")
    highlight = alt.selection_point(fields=["head"], bind="legend")
    return alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("value:Q", title=statistic, scale=alt.Scale(zero=False)),
        color=alt.Color("head:N", title="head", legend=alt.Legend(columns=2 if data["head"].nunique() > 12 else 1)),
        opacity=alt.condition(highlight, alt.value(1.0), alt.value(0.15)),
        tooltip=["head:N", "step:Q", alt.Tooltip("value:Q", format=".3f", title=statistic)],
    ).add_params(highlight).properties(
        width=width, height=260, autosize=AUTOSIZE,
        title=alt.TitleParams(f"Head specialisation over training · {ALL_TITLES[kind]} · {statistic}",
                              subtitle=f"{len(curves['steps'])} weight snapshots; click a head in the legend",
                              anchor="start", fontSize=13, subtitleColor="#555"))
