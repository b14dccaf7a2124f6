"""Dictionary features drawn: a score's top (query feature, key feature) pairs beside its error, bias and model terms
(`transformer.dictionaries.feature_qk`), a feature's sources as a row over the input (`feature_sources`), and a
feature's activations by decile."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..dictionaries import FeatureQKTable, FeatureSources

WIDTH = 520  # fits a 1280-px page beside its labels


def feature_pairs_frame(table: FeatureQKTable, top: int = 12) -> pd.DataFrame:
    """The `top` feature pairs by |contribution|, then the rest of the pairs and each term as rows: `label`,
    `contribution`, `what` (pair, other pairs, term)."""
    pairs = table.pairs()
    rows = [{"label": f"q#{q} × k#{k}", "contribution": c, "what": "pair"} for q, k, c in pairs[:top]]
    if len(pairs) > top:
        rows.append({"label": f"{len(pairs) - top} more pairs", "contribution": sum(c for _, _, c in pairs[top:]),
                     "what": "other pairs"})
    rows += [{"label": name, "contribution": value, "what": "term"} for name, value in table.terms().items()
             if value > -1e29]
    return pd.DataFrame(rows, columns=["label", "contribution", "what"])


def feature_pairs_chart(table: FeatureQKTable, top: int = 12) -> alt.Chart:
    """Bars of the score's feature pairs and terms, in the order `feature_pairs_frame` gives them."""
    frame = feature_pairs_frame(table, top)
    title = f"{table.table.head.label}: score {table.score:+.3f} in dictionary features"
    return alt.Chart(frame, title=title).mark_bar().encode(
        x=alt.X("contribution:Q", title="contribution to the score"),
        y=alt.Y("label:N", sort=list(frame["label"]), title=None, axis=alt.Axis(labelOverlap=False)),
        color=alt.Color("what:N", scale=alt.Scale(domain=["pair", "other pairs", "term"],
                                                  range=["#4c78a8", "#9ecae9", "#bab0ac"]), title=None),
        tooltip=["label", alt.Tooltip("contribution:Q", format="+.4f"), "what"],
    ).properties(width=WIDTH, height=max(120, 20 * len(frame)))


def feature_sources_chart(sources: FeatureSources, tokens: list[str]) -> alt.Chart:
    """The feature's pre-activation at its query taken apart over the source tokens (summed over heads), one cell a
    token, diverging colours."""
    shares = sources.by_source()
    if len(tokens) != len(shares):
        raise ValueError(f"{len(tokens)} token labels for {len(shares)} source positions")
    frame = pd.DataFrame({"position": range(1, len(shares) + 1), "token": tokens, "share": shares})
    top = max(abs(frame["share"]).max(), 1e-9)
    cell = alt.Chart(frame, title=f"feature #{sources.feature} at query {sources.query + 1}: "
                     f"{sources.activation:.3f}, by source").encode(
        x=alt.X("position:O", title=None, axis=alt.Axis(labelExpr="datum.value", labels=False)))
    heat = cell.mark_rect().encode(
        color=alt.Color("share:Q", scale=alt.Scale(scheme="redblue", domain=[top, -top]), title="share"),
        tooltip=["position", "token", alt.Tooltip("share:Q", format="+.4f")])
    text = cell.mark_text(fontSize=11).encode(text="token:N")
    return (heat + text).properties(width=min(WIDTH * 2, 24 * len(frame)), height=36)


def decile_chart(counts: dict[int, int], feature: int) -> alt.Chart:
    """How many tokens fall in each tenth of the feature's activation range (decile 9: the top)."""
    frame = pd.DataFrame({"decile": list(counts), "tokens": list(counts.values())})
    return alt.Chart(frame, title=f"#{feature}: tokens by activation decile").mark_bar().encode(
        x=alt.X("decile:O", title="tenth of the range (9: strongest)"),
        y=alt.Y("tokens:Q", scale=alt.Scale(type="symlog")),
        tooltip=["decile", "tokens"]).properties(width=WIDTH // 2, height=140)
