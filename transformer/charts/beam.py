"""The beam tree drawn (`decode.BeamTree`): nodes at (step, rank among the step's candidates), edges to their parent,
coloured by status (pruned greyed), a click selects a node; and one node's attention row, every layer and head."""
from __future__ import annotations

from typing import Any, Mapping

import altair as alt
import pandas as pd

from ..decode import BeamTree
from .style import AUTOSIZE, visible_token

BEAM_NODE = "beam_node"  # the selection's name: a click gives {"id": ...}
STATUS_COLORS = {"root": "#555555", "kept": "#1f77b4", "finished": "#2ca02c", "ended": "#9ecae1", "pruned": "#cccccc"}


def beam_frame(tree: BeamTree) -> pd.DataFrame:
    """One row per node: id, parent, step (1-based; 0 the prefix), row (its place among the step's candidates, best
    first), token, log_prob, score, status, and the parent's step and row for its edge."""
    rows: dict[int, int] = {0: 0}
    by_step: dict[int, list] = {}
    for node in tree.nodes[1:]:
        by_step.setdefault(node.step, []).append(node)
    for nodes in by_step.values():
        for i, node in enumerate(sorted(nodes, key=lambda n: -n.log_prob)):
            rows[node.id] = i
    records = []
    for node in tree.nodes:
        parent = node.parent if node.parent is not None else 0
        records.append({"id": node.id, "parent": node.parent, "step": node.step + 1, "row": rows[node.id],
                        "token": "prefix" if node.parent is None else visible_token(node.token),
                        "log_prob": node.log_prob, "score": node.score, "status": node.status,
                        "parent_step": tree.nodes[parent].step + 1, "parent_row": rows[parent]})
    return pd.DataFrame(records)


STEP_PX = 70  # a column of the tree: a dot and its token


def tree_window(tree: BeamTree, selected: int | None, max_width: int) -> tuple[int, int]:
    """The tree's columns [first, last) that fit `max_width` (column 0 the prefix, column s + 1 output step s): all
    when they fit, else as many as fit around the selected node's column."""
    n_columns = max(n.step for n in tree.nodes) + 2
    fit = max(2, (max_width - 120) // STEP_PX)
    if n_columns <= fit:
        return 0, n_columns
    centre = tree.nodes[selected].step + 1 if selected is not None else 0
    first = min(max(centre - fit // 2, 0), n_columns - fit)
    return first, first + fit


def beam_tree_chart(tree: BeamTree, *, selected: int | None = None, max_width: int = 1200) -> alt.LayerChart:
    """The tree, steps left to right, each step's candidates top (most probable) to bottom; pruned ones grey. A tree
    wider than `max_width` is drawn through `tree_window`'s columns (the caller names them)."""
    first, last = tree_window(tree, selected, max_width)
    frame = beam_frame(tree)
    frame = frame[(frame["step"] >= first) & (frame["step"] < last)]
    n_rows = int(frame["row"].max()) + 1
    width = min(max_width - 120, max(200, STEP_PX * (last - first)))
    height = min(640, max(120, 26 * n_rows))
    domain = [first - 0.3, last - 0.7]
    x = alt.X("step:Q", title="step", scale=alt.Scale(domain=domain), axis=alt.Axis(tickMinStep=1))
    y = alt.Y("row:Q", title=None, scale=alt.Scale(domain=[-0.5, n_rows - 0.5], reverse=True), axis=None)
    pick = alt.selection_point(name=BEAM_NODE, fields=["id"], on="click", toggle=False)
    color = alt.Color("status:N", scale=alt.Scale(domain=list(STATUS_COLORS), range=list(STATUS_COLORS.values())),
                      legend=alt.Legend(title=None, orient="top"))
    linked = frame[frame["parent"].notna() & (frame["parent_step"] >= first)]  # both ends drawn
    edges = alt.Chart(linked).mark_rule(strokeWidth=1).encode(
        x=alt.X("parent_step:Q", scale=alt.Scale(domain=domain)), x2="step:Q",
        y=alt.Y("parent_row:Q", scale=alt.Scale(domain=[-0.5, n_rows - 0.5], reverse=True), axis=None), y2="row:Q",
        color=alt.condition("datum.status == 'pruned'", alt.value("#dddddd"), alt.value("#8aa9c9")))
    tooltip = [alt.Tooltip("token:N"), alt.Tooltip("step:Q"), alt.Tooltip("log_prob:Q", format=".3f", title="log p"),
               alt.Tooltip("score:Q", format=".3f", title="ranked by"), alt.Tooltip("status:N")]
    points = alt.Chart(frame).mark_circle(size=90).encode(x=x, y=y, color=color, tooltip=tooltip).add_params(pick)
    labels = alt.Chart(frame).mark_text(align="left", dx=7, fontSize=11).encode(
        x=x, y=y, text="token:N", opacity=alt.condition("datum.status == 'pruned'", alt.value(0.45), alt.value(1.0)))
    layers = [edges, points, labels]
    if selected is not None:
        layers.append(alt.Chart(frame[frame["id"] == selected]).mark_circle(size=260, fill=None, stroke="#d62728",
                                                                            strokeWidth=2).encode(x=x, y=y))
    return alt.layer(*layers).properties(width=width, height=height, autosize=AUTOSIZE)


def clicked_beam_node(event: Mapping[str, Any] | None) -> int | None:
    """The node id clicked in `beam_tree_chart`, from Streamlit's selection state, or None."""
    points = ((event or {}).get("selection") or {}).get(BEAM_NODE) or []
    if not points or not isinstance(points, list) or not isinstance(points[0], Mapping):
        return None
    node = points[0].get("id")
    return None if node is None else int(node)


MAX_NODE_KEYS = 160  # key columns drawn at once (6 px each at least: within 1280 px with the labels)


def key_window(weights: Any, max_keys: int = MAX_NODE_KEYS) -> tuple[int, int]:
    """The keys [first, last) a node's attention chart draws: all when they fit, else `max_keys` of them centred on
    the key the heads attend to most on average."""
    n_keys = weights.shape[-1]
    if n_keys <= max_keys:
        return 0, n_keys
    centre = int(weights.reshape(-1, n_keys).mean(0).argmax())
    first = min(max(centre - max_keys // 2, 0), n_keys - max_keys)
    return first, first + max_keys


def keys_that_fit(max_width: int) -> int:
    """How many key columns a node's attention chart draws within `max_width` (6 px each at least, and the labels)."""
    return max(1, min(MAX_NODE_KEYS, (max_width - 120) // 6))


def node_attention_chart(weights: Any, keys: list[str], *, max_width: int = 1200) -> alt.Chart:
    """One node's attention row for one kind, (layers, heads, keys): a row per layer and head, a column per key (a
    window of `key_window`'s keys when there are more than fit; the caller names it)."""
    layers, heads, _ = weights.shape
    first, last = key_window(weights, keys_that_fit(max_width))
    n_keys = last - first
    frame = pd.DataFrame([{"head": f"L{layer + 1} H{head + 1}", "key": f"{k + 1}: {visible_token(keys[k])}",
                           "weight": float(weights[layer, head, k])}
                          for layer in range(layers) for head in range(heads) for k in range(first, last)])
    cell = max(6, min(22, (max_width - 120) // max(n_keys, 1)))
    order = list(dict.fromkeys(frame["key"]))
    return alt.Chart(frame).mark_rect().encode(
        x=alt.X("key:N", sort=order, title=None, axis=alt.Axis(labelAngle=-60, labelLimit=90)),
        y=alt.Y("head:N", sort=list(dict.fromkeys(frame["head"])), title=None),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="weight"),
        tooltip=["head", "key", alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=cell * n_keys, height=min(12, max(4, 480 // (layers * heads))) * layers * heads,
                 autosize=AUTOSIZE)
