"""The route of an output token (Ferrando & Voita 2024, "Information Flow Routes: Automatically Interpreting Language
Models at Scale"): a graph whose nodes are the residual streams' points (stack, depth, position) — the embeddings, and
the stream after each sublayer — and whose edges are what each attention head (from each key position), each MLP and
the residual connection adds into a node, weighted by its proximity to the node's output.

Into node y (position i, after sublayer s): the residual x_i, each head h's share from key j, α_hij W_O^h v_hj (a
cross-attention's keys are the encoder's last points), the MLP's output, and the biases; they sum to y (post-norm
models: each through the sublayer's norm, frozen at this input, its shift in the biases; a norm on the sublayer's
output, OLMo 2's and Gemma's, frozen the same way on all but the residual). In a parallel block (GPT-NeoX, Falcon)
the point after the attention is the layer's input plus the heads' outputs, and the MLP's edge comes from the
layer's input, which it reads. An edge's importance is
its proximity max(‖y‖₁ − ‖y − c‖₁, 0), normalised over everything added into y (the paper's eq. 3, after ALTI,
Ferrando et al. 2022; the LLM Transparency Tool's `get_contributions`). The route keeps, from the node that
predicts the step's token downwards, every edge above a threshold and the nodes they reach.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ...adapters import MLP, ResidualPathError
from ...model import Head
from .path_decode import DecodeParts
from .residual_parts import BIAS, PathCapture, frozen_norm, mlp_label

RESIDUAL = "residual"
THRESHOLD = 0.04  # the paper's τ for its graphs
KEPT_INFLOW_BYTES = 8 * 2 ** 20  # one node's inflow vectors kept between steps up to this size
KEPT_BYTES = 256 * 2 ** 20  # the heads' W_O v kept per layer while a route is followed, most recent first
Node = tuple[str, int, int]  # (stack, depth, position): depth 0 the embeddings, d after the stack's d-th sublayer


@dataclass(frozen=True)
class Inflow:
    """What is added into one node: `names` (`residual`, head labels, MLP labels, `bias`), the node each comes from
    (None for the biases), the vectors (P, D) that sum to `output` (D,), and their importances (P,)."""

    node: Node
    names: tuple[str, ...]
    sources: tuple[Node | None, ...]
    vectors: Tensor
    output: Tensor
    importance: Tensor


@dataclass(frozen=True)
class Edge:
    source: Node
    target: Node
    via: str  # a head label, an MLP label or "residual"
    importance: float


@dataclass
class Route:
    """The pruned graph of one step: its `start` node and the edges kept, strongest first within each node."""

    start: Node
    threshold: float
    edges: list[Edge] = field(default_factory=list)

    @property
    def nodes(self) -> list[Node]:
        return list(dict.fromkeys([self.start, *(n for e in self.edges for n in (e.target, e.source))]))


class RouteGraph:
    """Every node's inflow, computed when first asked for, on a kept path capture."""

    def __init__(self, cap: PathCapture) -> None:
        self.cap = cap
        self._streams: dict[str, list[Tensor]] = {}
        self._ov: OrderedDict[tuple[str, int], Tensor] = OrderedDict()  # most recently used last
        self._inflows: dict[Node, Inflow] = {}

    def sublayers(self, stack: str) -> list[tuple[int, int]]:
        """(layer, sublayer) after which each depth 1, 2, ... sits."""
        return [(i, s) for i, subs in enumerate(self.cap.path.stacks[stack].layers) for s in range(len(subs))]

    def last(self, stack: str) -> int:
        return len(self.sublayers(stack))

    def stream(self, stack: str) -> list[Tensor]:
        """The stream at every depth, (T, D) each, as the model computed it."""
        if stack not in self._streams:
            cap, pre = self.cap, self.cap.path.pre_norm
            resid = [r[0].float() for r in cap.insides.residual[stack]]
            out = [resid[0]]
            for layer, s in self.sublayers(stack):
                sub = cap.path.stacks[stack].layers[layer][s]
                last = s == len(cap.path.stacks[stack].layers[layer]) - 1
                if last:
                    out.append(resid[layer + 1])
                elif pre or sub.norm is None:
                    written = cap.insides.inputs[sub.name][layer].output
                    assert written is not None  # the path's capture keeps each attention's output
                    if sub.out_norm is not None:  # OLMo 2, Gemma: the output passes a norm before it joins
                        with torch.no_grad():
                            written = sub.out_norm(written)
                    out.append(out[-1] + written[0].float())
                else:
                    with torch.no_grad():
                        out.append(sub.norm(cap.record.norm_input(sub.norm)[0]).float())
            self._streams[stack] = out
        return self._streams[stack]

    def _head_vectors(self, kind: str, layer: int) -> Tensor:
        """W_O^h v_hj for every head and key, (H, Tk, D)."""
        key = (kind, layer)
        if key in self._ov:
            self._ov.move_to_end(key)
            return self._ov[key]
        inputs = self.cap.insides.inputs[kind][layer]
        weight = self.cap.outputs[kind][layer][0]
        v = inputs.head_values()[0].float()  # (H, Tk, Dv)
        made = torch.einsum("hjv,dhv->hjd", v, weight.view(weight.shape[0], inputs.n_heads, -1))
        self._ov[key] = made
        while len(self._ov) > 1 and sum(t.numel() * 4 for t in self._ov.values()) > KEPT_BYTES:
            self._ov.popitem(last=False)  # a long input at a real size: 64 MB a layer (bart-large, 1,024 keys)
        return made

    def inflow(self, node: Node) -> Inflow:
        """What is added into `node` and how much each part counts."""
        if node in self._inflows:
            return self._inflows[node]
        stack, depth, i = node
        if not 1 <= depth <= self.last(stack):
            raise ResidualPathError(f"no {stack} point at depth {depth}: the embeddings have no inflow")
        cap, (layer, s) = self.cap, self.sublayers(stack)[depth - 1]
        sub = cap.path.stacks[stack].layers[layer][s]
        before = self.stream(stack)[depth - 1][i]
        names, sources, vectors = [RESIDUAL], [(stack, depth - 1, i)], [before]
        if sub.name == MLP:
            after = (self.stream(stack)[depth][i] if cap.path.pre_norm
                     else cap.record.norm_input(sub.norm)[0, i].float())
            names.append(mlp_label(cap.path.stacks[stack].layers[layer][0].name, layer))
            parallel = cap.path.parallel and s > 0  # GPT-NeoX, Falcon: the MLP reads the layer's input
            sources.append((stack, depth - 1 - s if parallel else depth - 1, i))
            vectors.append(after - before)
            bias = torch.zeros_like(before)
        else:
            alpha = cap.insides.attentions[sub.name][layer][0, :, i].float()  # (H, Tk)
            shares = alpha[:, :, None] * self._head_vectors(sub.name, layer)  # (H, Tk, D)
            key_stack, key_depth = ("encoder", self.last("encoder")) if sub.name == "cross" else (stack, depth - 1)
            n_heads, n_keys = alpha.shape
            for h in range(n_heads):
                label = Head(sub.name, layer, h).label
                for j in range(n_keys):
                    names.append(label)
                    sources.append((key_stack, key_depth, j))
            vectors += list(shares.reshape(-1, shares.shape[-1]))
            b = cap.outputs[sub.name][layer][1]
            bias = torch.zeros_like(before) if b is None else b.float()
        stacked = torch.stack([*vectors, bias])
        if sub.out_norm is not None and sub.name != MLP:  # the heads' sum through its norm, frozen at that sum
            written = cap.record.norm_input(sub.out_norm)[0, i].float()
            normed, shift = frozen_norm(sub.out_norm, stacked[1:, None], written[None])
            stacked = torch.cat([stacked[:1], normed[:, 0]])
            if shift is not None:
                stacked[-1] += shift[0]
        if not cap.path.pre_norm and sub.norm is not None:
            total = cap.record.norm_input(sub.norm)[0, i].float()
            stacked, shift = frozen_norm(sub.norm, stacked[:, None], total[None])
            stacked = stacked[:, 0]
            if shift is not None:
                stacked[-1] += shift[0]
        output = self.stream(stack)[depth][i]
        importance = proximity(stacked, output)
        made = Inflow(node, (*names, BIAS), (*sources, None), stacked, output, importance)
        if stacked.numel() * 4 <= KEPT_INFLOW_BYTES:  # kept for the next step's route; a long input's are not
            self._inflows[node] = made
        return made


def proximity(parts: Tensor, whole: Tensor) -> Tensor:
    """Each part's share of `whole` (D,): max(‖whole‖₁ − ‖whole − part‖₁, 0), normalised to sum to 1."""
    near = (whole.abs().sum() - (whole[None] - parts).abs().sum(-1)).clamp(min=0)
    return near / near.sum().clamp(min=1e-12)


def route(graph: RouteGraph, start: Node, threshold: float = THRESHOLD) -> Route:
    """From `start` downwards, every edge whose importance is above `threshold` and the nodes it reaches (edges into
    the same node from one source through one head are summed over nothing: each is its own edge)."""
    if not 0 <= threshold < 1:
        raise ResidualPathError(f"threshold {threshold} must be at least 0 and below 1")
    found, seen, todo = Route(start, threshold), {start}, [start]
    while todo:
        node = todo.pop()
        if node[1] == 0:
            continue
        flow = graph.inflow(node)
        keep = [k for k in flow.importance.argsort(descending=True).tolist()
                if flow.importance[k] > threshold and flow.sources[k] is not None]
        for k in keep:
            source = flow.sources[k]
            found.edges.append(Edge(source, node, flow.names[k], float(flow.importance[k])))
            if source not in seen:
                seen.add(source)
                todo.append(source)
    return found


def node_label(graph: RouteGraph, node: Node) -> str:
    """'dec:L2.cross@3' (after layer 2's cross-attention, position 3), 'enc:L1@4' (after layer 1), 'dec:emb@1'."""
    stack, depth, i = node
    code = "enc" if stack == "encoder" else "dec"
    if depth == 0:
        return f"{code}:emb@{i + 1}"
    layer, s = graph.sublayers(stack)[depth - 1]
    subs = graph.cap.path.stacks[stack].layers[layer]
    point = f"L{layer + 1}" if s == len(subs) - 1 else f"L{layer + 1}.{Head(subs[s].name, 0, 0).label.split(':')[0]}"
    return f"{code}:{point}@{i + 1}"


def step_route(parts: DecodeParts, step: int, threshold: float = THRESHOLD, graph: RouteGraph | None = None
               ) -> tuple[Route, RouteGraph]:
    """The route of the decode's `step`-th output token (1-based): from the decoder's last point at the position
    that predicts it. `graph` (from an earlier call on the same capture) keeps the inflows computed."""
    graph = graph or RouteGraph(parts.capture)
    start = ("decoder", graph.last("decoder"), parts.step_row(step))
    return route(graph, start, threshold), graph


def route_dict(graph: RouteGraph, found: Route, parts: DecodeParts, step: int) -> dict:
    """JSON-ready: the step, its token, the threshold, the nodes and the edges ({from, to, via, importance})."""
    def token(node: Node) -> str:
        tokens = parts.source_tokens if node[0] == "encoder" else parts.decoder_tokens
        return tokens[node[2]]

    return {"step": step, "token": parts.outputs[step - 1], "threshold": found.threshold,
            "nodes": [{"node": node_label(graph, n), "token": token(n)} for n in found.nodes],
            "edges": [{"from": node_label(graph, e.source), "to": node_label(graph, e.target), "via": e.via,
                       "importance": e.importance} for e in found.edges]}
