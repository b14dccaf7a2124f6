"""Charts of head ablation and attribution: importance and agreement heatmaps (layers x heads), intact vs ablated
step probabilities. Attribution strips reuse `source_strip` / `decoder_row_chart` (same cells as attention)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..decode import ALL_TITLES as KIND_TITLES  # every family's kinds
from .heads import alignment_table_chart
from .style import AUTOSIZE, BAR_COLOR, CHOSEN_COLOR

SWEEP_SPACING, SWEEP_PANEL_MARGIN = 28, 110  # between panels; a panel's labels, axis title and legend


def importance_chart(sweep: pd.DataFrame, max_width: int | None = None) -> alt.ConcatChart:
    """Per attention kind, a layers x heads heatmap of the drop in log p(output) when the head is switched off; side
    by side as many as fit `max_width` pixels (None: all in one row), the others wrapped below, each with its legend."""
    missing = {"kind", "layer", "head", "drop"} - set(sweep.columns)
    if missing:
        raise ValueError(f"sweep needs columns kind, layer, head and drop; missing {', '.join(sorted(missing))}")
    if sweep.empty:
        raise ValueError("the sweep has no head")
    panels = []
    for kind in [k for k in KIND_TITLES if k in set(sweep["kind"])]:
        part = sweep[sweep["kind"] == kind].rename(columns={"drop": "score"})
        panel = alignment_table_chart(part[["layer", "head", "score"]].astype({"layer": int, "head": int}), signed=True)
        panel.autosize = alt.Undefined  # a concatenated view may not size itself: the whole chart does
        panels.append(panel.properties(title=alt.TitleParams(KIND_TITLES[kind], anchor="start", fontSize=13)))
    # a panel: 40 px a head, its layer labels and axis title at the left, its legend at the right, the spacing
    panel_px = 40 * int(sweep["head"].nunique()) + SWEEP_PANEL_MARGIN + SWEEP_SPACING
    columns = len(panels) if max_width is None else max(1, min(len(panels), max_width // panel_px))
    return alt.concat(*panels, columns=columns, spacing=SWEEP_SPACING).resolve_scale(color="independent").properties(
        autosize=AUTOSIZE)


def agreement_chart(agreement: pd.DataFrame, column: str = "spearman") -> alt.LayerChart:
    """Layers x heads (and the mean of heads) heatmap of one agreement figure: "spearman" or "top1"."""
    if column not in ("spearman", "top1"):
        raise ValueError(f"column must be 'spearman' or 'top1', not {column!r}")
    return alignment_table_chart(agreement.rename(columns={column: "score"}), signed=column == "spearman")


def step_probability_chart(comparison: pd.DataFrame) -> alt.LayerChart:
    """Per step, the chosen token's probability in the intact and the ablated run; steps that differ marked."""
    rows = []
    for r in comparison.itertuples():
        for run, token, prob in (("intact", r.intact, r.intact_prob), ("ablated", r.ablated, r.ablated_prob)):
            if token:
                rows.append({"step": int(r.step), "run": run, "token": token, "prob": float(prob),
                             "differs": bool(r.differs)})
    frame = pd.DataFrame(rows, columns=["step", "run", "token", "prob", "differs"])
    color = alt.Color("run:N", scale=alt.Scale(domain=["intact", "ablated"], range=[BAR_COLOR, CHOSEN_COLOR]),
                      title=None, legend=alt.Legend(orient="top"))
    base = alt.Chart(frame).encode(
        x=alt.X("step:O", title="step", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("prob:Q", title="probability of the chosen token", scale=alt.Scale(domain=[0, 1])),
        color=color, xOffset=alt.XOffset("run:N", sort=["intact", "ablated"]),
        tooltip=[alt.Tooltip("step:O"), alt.Tooltip("run:N"), alt.Tooltip("token:N"),
                 alt.Tooltip("prob:Q", format=".3f"), alt.Tooltip("differs:N", title="tokens differ")])
    bars = base.mark_bar().encode(opacity=alt.condition("datum.differs", alt.value(1.0), alt.value(0.55)))
    return alt.layer(bars).properties(width=max(240, 34 * max(1, frame["step"].nunique())), height=160,
                                      autosize=AUTOSIZE)
