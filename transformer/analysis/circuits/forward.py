"""The graph forward: a model run node by node, each downstream input read as a sum of upstream outputs, so that any
edge can be patched (its upstream output taken from the corrupted run) and any input differentiated.

One run of `graph_forward` starts from each stack's embeddings (`enc:emb`, `dec:emb`: the residual stream the first
layer reads, as the model computed it) and recomputes every sublayer from the pieces the model itself uses: each
pre-norm sublayer's own norm (run live on each input, so patching every edge gives the corrupted run and none the clean
one), W_Q, W_K, W_V and W_O per head, the rotary tables, query scales and additive score terms (masks, T5's bias),
soft-cap and sinks its capture recorded, the MLP (its module, or the pieces its layer calls inline), and the model's
own output function for the logits. A cross-attention's keys and values read the encoder's nodes through the
encoder's final norm. The norms on the stream itself — a post-norm model's after each sum, Gemma's on a sublayer's
output — are frozen at the clean run (`frozen`): each node's output reaches a later input through each of them as the
linear map it was on the clean run, so the stream stays a sum of its nodes' outputs.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch
from torch import Tensor, nn

from ...adapters import MLP, InspectableModel, ResidualPathError
from ..why.qk_attribution import _rotate
from ..why.residual_parts import PathCapture, capture_path
from .frozen import FrozenNorm, frozen_at, frozen_norm, watching, whole_mlp
from .graph import LOGITS, CircuitGraph, Sublayer, build_graph


@contextmanager
def finding_mlps(network: nn.Module, norms: dict[int, tuple[str, int]]) -> Iterator[dict[tuple[str, int], nn.Module]]:
    """While inside, the first module each watched norm's output is handed to (the MLP it feeds), by (stack, layer);
    `norms` maps id(norm) to (stack, layer). Hooks are borrowed for the call and record only this thread."""
    me, handles = threading.get_ident(), []
    outputs: dict[int, tuple[str, int]] = {}
    found: dict[tuple[str, int], nn.Module] = {}
    modules = dict(network.named_modules())

    def after_norm(module: nn.Module, args: tuple, out: Tensor) -> None:
        if threading.get_ident() == me:
            outputs[id(out)] = norms[id(module)]

    def before(module: nn.Module, args: tuple) -> None:
        if threading.get_ident() == me and args and isinstance(args[0], Tensor):
            key = outputs.get(id(args[0]))
            if key is not None and key not in found:
                found[key] = module

    try:
        for module in modules.values():
            if id(module) in norms:
                handles.append(module.register_forward_hook(after_norm))
            elif module is not network:
                handles.append(module.register_forward_pre_hook(before))
        yield found
    finally:
        for handle in handles:
            handle.remove()


@dataclass(frozen=True)
class Plan:
    """One model on one input: the graph, the clean run's capture (what the recompute reads) and each MLP module."""

    adapter: InspectableModel
    graph: CircuitGraph
    cap: PathCapture
    mlps: dict[tuple[str, int], nn.Module]
    position: int  # the output stack's position whose logits the metric reads
    src: Tensor  # the source ids (1, S) captured
    tgt: Tensor | None  # the decoder inputs (1, T) (None: encoder-only)
    head_norm_inputs: dict[int, Tensor] = field(default_factory=dict)  # id(norm) -> the clean input of a query or
    # key norm over every head at once (OLMo 2), (1, T, H * Dh)

    def embeddings(self) -> dict[str, Tensor]:
        """Each stack's embeddings as this run's model computed them, (1, T, D) float."""
        return {stack: r[0].float() for stack, r in self.cap.insides.residual.items()}


def make_plan(adapter: InspectableModel, src: Tensor, tgt: Tensor | None, position: int,
              graph: CircuitGraph | None = None) -> Plan:
    """Capture one input (source ids (1, S), decoder inputs (1, T); None for an encoder-only model) and find the MLP
    modules; call inside `adapter.running()`."""
    path = adapter.residual_path()
    norms = {id(norm): (stack, layer) for stack, spec in path.stacks.items()
             for layer, subs in enumerate(spec.layers) for i, s in enumerate(subs) if s.name == MLP
             for norm in [s.norm if path.pre_norm else subs[i - 1].norm if i else None] if norm is not None}
    unnormed = {id(s.out_norm): (stack, layer) for stack, spec in path.stacks.items()
                for layer, subs in enumerate(spec.layers) for s in subs
                if s.name == MLP and s.norm is None and s.out_norm is not None}
    head_norms = [n for kind in path.projections.values() for p in kind for n in (p.q_norm, p.k_norm) if n is not None]
    with finding_mlps(adapter.network, norms) as found, watching(adapter.network, head_norms, unnormed) as watched:
        cap = capture_path(adapter, src, tgt)
    mlps = {key: whole_mlp(adapter.network, module) for key, module in {**found, **watched[1]}.items()}
    missing = [key for key in [*norms.values(), *unnormed.values()] if key not in mlps]
    if missing:
        raise ResidualPathError(f"{adapter.name}: the MLP of {missing[0][0]} layer {missing[0][1] + 1} was not found "
                                "after its norm")
    if graph is None:
        graph = build_graph(cap.path, adapter.head_counts(), adapter.head_groups(), adapter.family.output_stack)
    return Plan(adapter, graph, cap, mlps, position, src, tgt, watched[0])


@dataclass
class Mixing:
    """An edge-patched run: `keep[i]` (n_up,) per input, 1 where the edge is in the circuit (its upstream output comes
    from this run), 0 where it takes the corrupted run's output (`corrupted[stack]`, (N, 1, T, D)); `keep[i]` (n_up, B)
    runs one circuit per batch row (the embeddings repeated B times)."""

    corrupted: dict[str, Tensor]
    keep: list[Tensor]


@dataclass
class _Stack:
    outs: list[Tensor] = field(default_factory=list)  # each node's output (B, T, D)
    now: list[Tensor] = field(default_factory=list)  # each node's output as it reaches the next input (frozen norms)
    resid: dict[int, Tensor] = field(default_factory=dict)  # nodes written -> this run's stream then
    bias: dict[int, Tensor | float] = field(default_factory=dict)  # nodes written -> the output biases added so far


@dataclass(frozen=True)
class GraphRun:
    """One graph forward: the logits at the target (B, V), every node's output per stack (N, B, T, D), the zeros
    added to the inputs (`probes`, when asked: (input indices, zeros (V, ...)); their gradient is the metric's gradient
    at each input) and, when asked, what each upstream node's output had become through the frozen norms when each
    input read it (`arrived`, only for reads after a frozen norm on the stream)."""

    logits: Tensor
    outs: dict[str, Tensor]
    probes: list[tuple[tuple[int, ...], Tensor]]
    arrived: dict[int, Tensor] = field(default_factory=dict)  # first input index of a read -> (n_up, B, T, D)


def _call(module: nn.Module, x: Tensor) -> Tensor:
    """A module of the model on float input x, in its own dtype; float out."""
    param = next(module.parameters(), None)
    out = module(x if param is None else x.to(param.dtype))
    return (out[0] if isinstance(out, tuple) else out).float()  # a mixture of experts also returns its router's logits


class _Forward:
    def __init__(self, plan: Plan, emb: dict[str, Tensor], mixing: Mixing | None, probes: bool, arrivals: bool
                 ) -> None:
        self.plan, self.mixing, self.want, self.arrivals = plan, mixing, probes, arrivals
        self.stacks = {s: _Stack([e], [e], {1: e}, {1: 0.0}) for s, e in emb.items()}
        self.probes: list[tuple[tuple[int, ...], Tensor]] = []
        self.arrived: dict[int, Tensor] = {}
        self.frozen: set[str] = set()  # stacks whose stream has passed a frozen norm
        self.batch = next(iter(emb.values())).shape[0]
        self.corr = {} if mixing is None else dict(mixing.corrupted)
        self.sums = {s: c.cumsum(0) for s, c in self.corr.items()}

    def read(self, idxs: tuple[int, ...], position: int | None = None) -> Tensor:
        """The inputs `idxs` (V, B, T, D) (at one position: (V, B, D)), all from one stack's first n_up nodes."""
        first = self.plan.graph.inputs[idxs[0]]
        state = self.stacks[first.source]
        at = (slice(None), slice(None)) if position is None else (slice(None), position)
        if self.arrivals and first.source in self.frozen:
            self.arrived[idxs[0]] = torch.stack(state.now[:first.n_up])
        if self.mixing is None:
            x = state.resid[first.n_up][at]
            x = x.expand(len(idxs), *x.shape)
            if self.want:
                leaf = torch.zeros_like(x, requires_grad=True)
                self.probes.append((idxs, leaf))
                x = x + leaf
            return x
        n, v = first.n_up, len(idxs)
        w = torch.stack([self.mixing.keep[i] for i in idxs], 1)  # (n, V) or, a circuit per batch row, (n, V, B)
        w = w if w.dim() == 3 else w[..., None]
        on, off = (w != 0).flatten(1).any(1).nonzero()[:, 0], (w != 1).flatten(1).any(1).nonzero()[:, 0]
        corrupted = self.corr[first.source]
        if len(on) <= len(off):  # few edges kept: the corrupted stream, plus what the kept edges change
            bias = state.bias[n]  # (D,), or, through a frozen norm, (T, D)
            bias = bias[position] if isinstance(bias, Tensor) and bias.dim() == 2 and position is not None else bias
            base = self.sums[first.source][n - 1][at] + bias
            base = base.expand(self.batch, *base.shape[1:])
            rows, weights, sign = on, w[on], 1.0
        else:  # few edges patched: this run's stream, minus what the patched edges change
            base, rows, weights, sign = state.resid[n][at], off, 1 - w[off], -1.0
        base = base.expand(v, *base.shape)
        if not len(rows):
            return base
        outs = torch.stack([state.now[int(r)] for r in rows])[(slice(None), *at)]  # (r, B, T, D)
        change = outs - corrupted[rows][(slice(None), *at)]
        weights = weights.to(change.dtype).expand(-1, -1, change.shape[1])  # (r, V, B)
        return base + sign * torch.einsum("rb...,rvb->vb...", change, weights)

    def written(self, stack: str, new: Tensor, bias: Tensor | None) -> None:
        """Append nodes `new` (P, B, T, D) to `stack`; they and `bias` join its stream."""
        state = self.stacks[stack]
        n = len(state.outs)
        state.outs += list(new)
        state.now += list(new)
        state.resid[n + len(new)] = state.resid[n] + new.sum(0) + (0.0 if bias is None else bias)
        state.bias[n + len(new)] = state.bias[n] + (0.0 if bias is None else bias)

    def normed(self, stack: str, norm: nn.Module | None) -> None:
        """`norm` on the stream of `stack` (post-norm: after a sum), frozen at the clean run: every node's output so
        far, the biases and the stream through it (the corrupted run's outputs too)."""
        if norm is None or isinstance(norm, nn.Identity):
            return
        f = frozen_norm(self.plan.cap, norm)
        state = self.stacks[stack]
        n = len(state.now)
        state.now = [f.linear(x) for x in state.now]
        state.resid[n], state.bias[n] = f(state.resid[n]), f.bias(state.bias[n])
        if stack in self.corr:
            corr = self.corr[stack].clone()
            corr[:n] = f.linear(corr[:n])
            self.corr[stack], self.sums[stack] = corr, corr.cumsum(0)
        self.frozen.add(stack)

    def _out_norm(self, sub: Sublayer) -> FrozenNorm | None:
        spec = self.plan.cap.path.stacks[sub.stack].layers[sub.layer]
        out = next(s.out_norm for s in spec if s.name == sub.kind)
        return None if out is None else frozen_norm(self.plan.cap, out)

    def _norms(self, sub: Sublayer) -> tuple[nn.Module | None, nn.Module | None]:
        """(the norm on this sublayer's input (pre-norm, live), the norm after its sum (post-norm, frozen))."""
        spec = self.plan.cap.path.stacks[sub.stack].layers[sub.layer]
        norm = next(s.norm for s in spec if s.name == sub.kind)
        return (norm, None) if self.plan.cap.path.pre_norm else (None, norm)

    def _head_norm(self, norm: nn.Module | None, n: int, width: int) -> Callable[[Tensor], Tensor] | None:
        """A query or key norm on (B, n, T, width): per head (Qwen3, Gemma 3) live; over every head at once (OLMo 2)
        an RMSNorm frozen at the clean run, so that each head's query reads only its own input."""
        if norm is None:
            return None
        if getattr(getattr(norm, "weight", None), "shape", (width,))[0] == width:
            return lambda out: _call(norm, out)
        clean = self.plan.head_norm_inputs.get(id(norm))
        f = None if clean is None else frozen_at(norm, clean[0])
        if f is None or f.centre:
            raise ResidualPathError("a query or key norm over every head at once mixes the heads' inputs: their edges "
                                    "cannot be patched one by one")
        gain = f.gain.view(n, 1, width) if isinstance(f.gain, Tensor) else f.gain
        return lambda out: out / f.divisor * gain

    def attention(self, sub: Sublayer) -> None:
        plan, cap = self.plan, self.plan.cap
        kind, layer = sub.kind, sub.layer
        inputs = cap.insides.inputs[kind][layer]
        proj = cap.path.projections[kind][layer]
        norm, after = self._norms(sub)
        h, n_kv = sub.n_heads, sub.n_kv
        q_idx, k_idx, v_idx = sub.inputs[:h], sub.inputs[h:h + n_kv], sub.inputs[h + n_kv:]
        xq = self.read(q_idx)
        xq = xq if norm is None else _call(norm, xq)
        xk, xv = self.read(k_idx), self.read(v_idx)
        if kind == "cross":
            xk, xv = plan.adapter.encoder_final_norm(xk).float(), plan.adapter.encoder_final_norm(xv).float()
        elif norm is not None:
            xk, xv = _call(norm, xk), _call(norm, xv)
        dh = inputs.queries.shape[-1]
        q = _project(xq, proj.wq, proj.bq, h, dh, self._head_norm(proj.q_norm, h, dh))  # (B, H, T, Dh)
        k = _project(xk, proj.wk, proj.bk, n_kv, dh, self._head_norm(proj.k_norm, n_kv, dh))  # (B, Hkv, S, Dh)
        v = _project(xv, proj.wv, proj.bv, n_kv, inputs.values.shape[-1], None)
        tables = cap.record.rotary.get((kind, layer))
        if tables is not None:
            cos, sin = (t.reshape(-1, *t.shape[-2:])[0].float().clone() for t in tables)  # (T, width); not inference
            q = _rotate(q, cos[-q.shape[2]:], sin[-q.shape[2]:], cap.path.half_tables)
            k = _rotate(k, cos[-k.shape[2]:], sin[-k.shape[2]:], cap.path.half_tables)
        scales = cap.record.query_scales.get((kind, layer))
        if scales is not None:
            q = q * scales.float().clone()
        groups = list(sub.groups)
        scores = inputs.capped(q @ k[:, groups].transpose(-2, -1) * inputs.scale)
        for term in inputs.terms.values():
            scores = scores + term.float().clone()
        z = inputs.normalised(scores) @ v[:, groups]  # (B, H, T, Dv)
        weight, bias = cap.outputs[kind][layer]
        heads = torch.einsum("bhtv,dhv->hbtd", z, weight.clone().view(weight.shape[0], h, -1))
        out_norm = self._out_norm(sub)
        if out_norm is not None:  # the heads' sum normed before it joins the stream: each head through it, frozen
            normed = out_norm.bias(0.0 if bias is None else bias)
            heads, bias = out_norm.linear(heads), normed if isinstance(normed, Tensor) else None
        self.written(sub.stack, heads, bias)
        self.normed(sub.stack, after)

    def mlp(self, sub: Sublayer) -> None:
        norm, after = self._norms(sub)
        x = self.read(sub.inputs)[0]
        mlp = self.plan.mlps.get((sub.stack, sub.layer))
        if mlp is None:
            raise ResidualPathError(f"{self.plan.adapter.name}: the MLP of {sub.stack} layer {sub.layer + 1} was not "
                                    "found")
        out = _call(mlp, x if norm is None else _call(norm, x))
        out_norm = self._out_norm(sub)
        self.written(sub.stack, (out if out_norm is None else out_norm(out))[None], None)
        self.normed(sub.stack, after)

    def run(self) -> GraphRun:
        graph = self.plan.graph
        for stack in ("encoder", "decoder"):
            for sub in graph.sublayers.get(stack, ()):
                self.mlp(sub) if sub.kind == MLP else self.attention(sub)
        x = self.read((graph.logits_input,), self.plan.position)[0]  # (B, D)
        logits = self.plan.adapter.output_head(x.to(_dtype(self.plan))).float()
        outs = {s: torch.stack(st.outs) for s, st in self.stacks.items()}
        return GraphRun(logits, outs, self.probes, self.arrived)


def _dtype(plan: Plan) -> torch.dtype:
    return next(plan.adapter.network.parameters()).dtype


def _project(x: Tensor, weight: Tensor, bias: Tensor | None, n: int, width: int,
             head_norm: Callable[[Tensor], Tensor] | None) -> Tensor:
    """Head i's projection of its own input x[i] (n, B, T, D) -> (B, n, T, width); a query or key norm after it."""
    w = weight.detach().float().clone().view(n, width, -1)  # a split made under inference mode is not one here
    out = torch.einsum("nbtd,nwd->bntw", x, w)
    if bias is not None:
        out = out + bias.detach().float().clone().view(1, n, 1, width)
    return out if head_norm is None else head_norm(out)


def graph_forward(plan: Plan, emb: dict[str, Tensor] | None = None, mixing: Mixing | None = None, *,
                  probes: bool = False, arrivals: bool = False) -> GraphRun:
    """Run the graph from `emb` (each stack's embeddings (B, T, D); default: the plan's own) with `mixing`'s edges
    patched (None: none); `probes`: a zero added to every input, whose gradient the caller takes; `arrivals`: keep
    each node's output as each input read it, where frozen norms changed it (`GraphRun.arrived`)."""
    if probes and mixing is not None:
        raise ValueError("probes are for plain runs")
    return _Forward(plan, plan.embeddings() if emb is None else emb, mixing, probes, arrivals).run()


__all__ = ["LOGITS", "GraphRun", "Mixing", "Plan", "graph_forward", "make_plan"]
