"""The graph a circuit is found in: nodes are each stack's embeddings, every attention head (per kind), every MLP and
the logits; an edge runs from an upstream node's output to one input of a downstream node — a head's query, key or
value (separately, so Q-, K- and V-composition show), an MLP's input, or the logits.

Upstream nodes of a stack are listed in the order the forward writes them (`CircuitGraph.nodes[stack]`); each input
reads a prefix of its stack's list (`Input.n_up`): every node written before it. A cross-attention's queries read the
decoder's nodes, its keys and values every encoder node (through the encoder's final norm). With grouped-query
attention an edge into a key or value goes to the shared key/value head, named `self:L1KV2` (layer 1, group 2).
Heads are spelled as `Head.label` (`self:L1H2`), MLPs as `mlp_label` (`dec:L2.mlp`), embeddings `enc:emb` / `dec:emb`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...adapters import MLP, ResidualPath
from ...model import Head
from ..why.residual_parts import mlp_label

LOGITS = "logits"
Q, K, V = "q", "k", "v"
INPUTS = (Q, K, V, MLP, LOGITS)
STACK_CODES = {"encoder": "enc", "decoder": "dec"}


def emb_label(stack: str) -> str:
    """`enc:emb` / `dec:emb`: a stack's embeddings (tokens, positions, segments) as one node."""
    return f"{STACK_CODES[stack]}:emb"


def kv_label(kind: str, layer: int, group: int) -> str:
    """`self:L1KV2`: the key/value head `group` (0-based) of a grouped-query layer, which several query heads share."""
    return Head(kind, layer, 0).label.rsplit("H", 1)[0] + f"KV{group + 1}"


@dataclass(frozen=True)
class Input:
    """One input of a downstream node: `node` (its label), `input` (q, k, v, mlp or logits), the stack whose nodes
    feed it (`source`) and how many of them (`n_up`: the first n of `CircuitGraph.nodes[source]`)."""

    node: str
    input: str
    source: str
    n_up: int


@dataclass(frozen=True)
class Sublayer:
    """One sublayer of the forward: an attention `kind` at `layer` (its heads, groups) or the MLP (`kind` MLP)."""

    stack: str
    layer: int
    kind: str
    n_heads: int = 0
    groups: tuple[int, ...] = ()
    inputs: tuple[int, ...] = ()  # indices into CircuitGraph.inputs: q per head, then k, v per key/value head; or mlp

    @property
    def n_kv(self) -> int:
        return len(set(self.groups))


@dataclass(frozen=True)
class CircuitGraph:
    """Every node and input of a model's graph, in forward order."""

    nodes: dict[str, tuple[str, ...]]  # stack -> upstream node labels in forward order
    inputs: tuple[Input, ...]
    sublayers: dict[str, tuple[Sublayer, ...]]  # stack -> its sublayers in forward order
    output_stack: str
    logits_input: int  # index of the logits' input

    def edges(self) -> list[tuple[str, int]]:
        """Every edge as (upstream label, input index), in input order."""
        return [(u, i) for i, inp in enumerate(self.inputs) for u in self.nodes[inp.source][:inp.n_up]]

    @property
    def n_edges(self) -> int:
        return sum(inp.n_up for inp in self.inputs)


def build_graph(path: ResidualPath, counts: dict[str, tuple[int, int]], groups: dict[str, tuple[int, ...]],
                output_stack: str) -> CircuitGraph:
    """The graph of a model with this residual path, (layers, heads) per kind and key/value group per query head."""
    nodes: dict[str, list[str]] = {}
    inputs: list[Input] = []
    sublayers: dict[str, list[Sublayer]] = {}
    order = [s for s in ("encoder", "decoder") if s in path.stacks]
    for stack in order:
        nodes[stack] = [emb_label(stack)]
        sublayers[stack] = []
        for layer, subs in enumerate(path.stacks[stack].layers):
            layer_start = len(nodes[stack])
            written: list[str] = []
            for sub in subs:
                n_up = layer_start if path.parallel else len(nodes[stack]) + len(written)
                if sub.name == MLP:
                    kind = subs[0].name
                    label = mlp_label(kind, layer)
                    inputs.append(Input(label, MLP, stack, n_up))
                    sublayers[stack].append(Sublayer(stack, layer, MLP, inputs=(len(inputs) - 1,)))
                    written.append(label)
                    continue
                n_heads = counts[sub.name][1]
                kv = groups.get(sub.name, tuple(range(n_heads)))
                grouped = len(set(kv)) < n_heads
                first = len(inputs)
                heads = [Head(sub.name, layer, h).label for h in range(n_heads)]
                inputs += [Input(label, Q, stack, n_up) for label in heads]
                kv_source, kv_up = (("encoder", len(nodes["encoder"])) if sub.name == "cross" else (stack, n_up))
                for what in (K, V):
                    inputs += [Input(kv_label(sub.name, layer, g) if grouped else heads[kv.index(g)], what, kv_source,
                                     kv_up) for g in sorted(set(kv))]
                sublayers[stack].append(Sublayer(stack, layer, sub.name, n_heads, kv, tuple(range(first, len(inputs)))))
                written += heads
            nodes[stack] += written
    inputs.append(Input(LOGITS, LOGITS, output_stack, len(nodes[output_stack])))
    return CircuitGraph({s: tuple(n) for s, n in nodes.items()}, tuple(inputs),
                        {s: tuple(v) for s, v in sublayers.items()}, output_stack, len(inputs) - 1)
