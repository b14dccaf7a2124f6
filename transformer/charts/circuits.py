"""A circuit drawn (analysis.circuits): layers as rows from the embeddings at the bottom to the logits at the top,
each row's heads (self, then cross) and its MLP as nodes, the circuit's top-n edges as lines whose width is the
edge's |score| and whose colour is the input it enters (q, k, v, an MLP's, the logits'); a grouped-query model's
key/value edges end at the first query head of their group. Beside it the faithfulness curve: the share of the clean
metric each circuit keeps when every edge outside it is patched, the goal and the n picked. A click on a node selects
it (`CIRCUIT_NODE`)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..analysis.circuits import GOAL, INPUTS, LOGITS, CircuitGraph, CircuitResult, EdgeScore, emb_label, kv_label
from ..model import Head
from .style import AUTOSIZE, PLAIN_AXIS

CIRCUIT_NODE = "circuit_node"
INPUT_COLORS = {"q": "#1f77b4", "k": "#d62728", "v": "#2ca02c", "mlp": "#9467bd", LOGITS: "#7f7f7f"}
MAX_DRAWN = 400  # edges drawn at most (the strongest); the slider's n above it says so
WIDTH, MAX_HEIGHT = 620, 520


def node_layout(graph: CircuitGraph) -> pd.DataFrame:
    """One row per node: label, x (its place in its row), y (its row: 0 the first stack's embeddings), row title and
    what it is (emb, head, mlp, logits); a grouped-query layer's key/value heads sit on their group's first head."""
    rows: list[dict] = []
    y = 0
    for stack in graph.nodes:
        rows.append({"node": emb_label(stack), "x": 0.0, "y": y, "row": emb_label(stack), "what": "emb"})
        layers = sorted({s.layer for s in graph.sublayers[stack]})
        for layer in layers:
            y += 1
            x = 0.0
            title = f"{'enc' if stack == 'encoder' else 'dec'} L{layer + 1}"
            for sub in (s for s in graph.sublayers[stack] if s.layer == layer):
                if sub.kind == "mlp":
                    rows.append({"node": graph.inputs[sub.inputs[0]].node, "x": x, "y": y, "row": title,
                                 "what": "mlp"})
                    x += 1
                    continue
                first: dict[int, float] = {}
                for h in range(sub.n_heads):
                    rows.append({"node": Head(sub.kind, layer, h).label, "x": x, "y": y, "row": title, "what": "head"})
                    first.setdefault(sub.groups[h], x)
                    x += 1
                if len(first) < sub.n_heads:
                    rows += [{"node": kv_label(sub.kind, layer, g), "x": gx, "y": y, "row": title, "what": "kv"}
                             for g, gx in first.items()]
                x += 0.5
        y += 1
    rows.append({"node": LOGITS, "x": 0.0, "y": y, "row": LOGITS, "what": LOGITS})
    return pd.DataFrame(rows)


def edge_frame(edges: list[EdgeScore], nodes: pd.DataFrame) -> pd.DataFrame:
    """The edges as lines between their nodes' places: x, y, x2, y2, from, to, input, score, strength (|score|)."""
    at = nodes.set_index("node")[["x", "y"]]
    rows = [{"x": at.loc[e.source, "x"], "y": at.loc[e.source, "y"], "x2": at.loc[e.target, "x"],
             "y2": at.loc[e.target, "y"], "from": e.source, "to": e.target, "input": e.input, "score": e.score,
             "strength": abs(e.score)} for e in edges]
    return pd.DataFrame(rows, columns=["x", "y", "x2", "y2", "from", "to", "input", "score", "strength"])


def circuit_chart(result: CircuitResult, n: int, *, width: int = WIDTH) -> alt.LayerChart:
    """The circuit of the top n edges (the strongest `MAX_DRAWN` of them) on the model's layers."""
    nodes = node_layout(result.graph)
    edges = edge_frame(result.top(min(n, MAX_DRAWN)), nodes)
    used = set(edges["from"]) | set(edges["to"])
    nodes = nodes[nodes["what"] != "kv"].assign(used=lambda f: f["node"].isin(used))
    n_rows = int(nodes["y"].max()) + 1
    height = min(MAX_HEIGHT, max(160, 34 * n_rows))
    rows = nodes.drop_duplicates("y")[["y", "row"]]
    x = alt.X("x:Q", axis=None, scale=alt.Scale(domain=[-1.5, float(nodes["x"].max()) + 0.5]))
    y = alt.Y("y:Q", axis=None, scale=alt.Scale(domain=[-0.5, n_rows - 0.5]))
    top = float(edges["strength"].max()) if len(edges) else 1.0
    lines = alt.Chart(edges).mark_rule(opacity=0.75).encode(
        x=x, y=y, x2="x2:Q", y2="y2:Q",
        color=alt.Color("input:N", title="enters", scale=alt.Scale(domain=list(INPUTS),
                                                                   range=[INPUT_COLORS[i] for i in INPUTS])),
        strokeWidth=alt.StrokeWidth("strength:Q", title="|score|", scale=alt.Scale(domain=[0, top], range=[0.5, 6])),
        tooltip=["from:N", "to:N", "input:N", alt.Tooltip("score:Q", format="+.4f")])
    pick = alt.selection_point(name=CIRCUIT_NODE, fields=["node"], on="click", toggle=False)
    points = alt.Chart(nodes).mark_circle(stroke="#333").encode(
        x=x, y=y, size=alt.condition("datum.used", alt.value(140), alt.value(40)),
        color=alt.condition("datum.used", alt.value("#4c78a8"), alt.value("#e0e0e0")),
        strokeWidth=alt.condition("datum.used", alt.value(1), alt.value(0)),
        tooltip=[alt.Tooltip("node:N", title="node"), alt.Tooltip("what:N", title="is")]).add_params(pick)
    titles = alt.Chart(rows).mark_text(align="right", dx=-6, fontSize=11, color="#555").encode(
        x=alt.datum(-0.6), y=y, text="row:N")
    drawn = f"{min(n, MAX_DRAWN)} strongest of {n}" if n > MAX_DRAWN else str(n)
    return alt.layer(lines, points, titles).properties(
        width=width, height=height, autosize=AUTOSIZE,
        title=alt.TitleParams(f"Circuit of the top {drawn} edges", anchor="start", fontSize=14))


def faithfulness_chart(result: CircuitResult, n: int, *, width: int = 380) -> alt.LayerChart:
    """The faithfulness curve over n (a symlog axis), the goal and the n picked."""
    points = pd.DataFrame([{"n": k, "value": v} for k, v in result.faithfulness.points.items()])
    x = alt.X("n:Q", title="edges kept (n)", scale=alt.Scale(type="symlog"), axis=alt.Axis(**PLAIN_AXIS))
    curve = alt.Chart(points).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title="share of the clean metric kept", axis=alt.Axis(**PLAIN_AXIS)),
        tooltip=["n:Q", alt.Tooltip("value:Q", format=".3f")])
    goal = alt.Chart(pd.DataFrame({"goal": [GOAL]})).mark_rule(strokeDash=[4, 3], color="#999").encode(y="goal:Q")
    picked = alt.Chart(pd.DataFrame({"n": [n]})).mark_rule(color="#d62728").encode(x="n:Q")
    return alt.layer(curve, goal, picked).properties(
        width=width, height=260, autosize=AUTOSIZE,
        title=alt.TitleParams(f"Faithfulness (area {result.faithfulness.area:.3f})", anchor="start", fontSize=14))
