"""The residual stream taken apart: at any position of any layer, the stream is a sum of parts — the token embedding
(`embed`), the position embedding (`pos`), each earlier head's output (by `Head.label`, `enc:L1H2`), each MLP's output
(`enc:L1.mlp`) and the biases (`bias`: output-projection biases and every norm's shift).

A head's part is its slice of the output projection applied to its output, `W_O^h z_h` (the "residual stream as a sum"
view of Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits"). Norms are not linear, but at one
input each is a fixed linear map per position: LayerNorm is `(x - mean(x)) / std(x) * gamma + beta` with std taken from
the whole stream x this input gave it, so each part p goes to `(p - mean(p)) / std(x) * gamma` (the centring kept as a
linear projection) and `beta` joins `bias`; an RMSNorm is `p / rms(x) * gamma` (Gemma's `* (1 + gamma)`). A norm on a
sublayer's output (OLMo 2, Gemma 2 and 3) is frozen the same way at that output. In post-norm models (BART, Marian,
BERT) every later sum is normed, so the parts go through every norm on the path, each frozen this way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import torch
from torch import Tensor, nn

from ...adapters import MLP, InspectableModel, PathRecord, ResidualPath, ResidualPathError, norm_gain
from ...model import Head, Insides

BIAS, EMBED, POS = "bias", "embed", "pos"


@dataclass(frozen=True)
class PathCapture:
    """One forward's insides with what its residual path saw, and each attention's output projection."""

    model: str
    insides: Insides
    record: PathRecord
    path: ResidualPath
    outputs: dict[str, tuple[tuple[Tensor, Tensor | None], ...]]  # kind -> per layer (W_O (D, H*Dv), b_O)


def _detached(weight: Tensor, bias: Tensor | None) -> tuple[Tensor, Tensor | None]:
    return weight.detach().float(), None if bias is None else bias.detach().float()


def capture_path(adapter: InspectableModel, src: Tensor, tgt: Tensor | None) -> PathCapture:
    """A teacher-forced forward of `adapter` over source ids (1, S) and decoder inputs (1, T) (None: encoder-only) with
    everything the parts need; ResidualPathError for a family that is not taken apart."""
    path = adapter.residual_path()
    insides, record = adapter.path_insides(src, tgt)
    outputs = {kind: tuple(_detached(*adapter.output_projection(kind, i)) for i in range(n))
               for kind, (n, _) in adapter.head_counts().items()}
    return PathCapture(adapter.name, insides, record, path, outputs)


@dataclass(frozen=True)
class Parts:
    """Parts of the stream at `positions`: `names` (P) and `vectors` (P, N, D); they sum to the stream."""

    names: tuple[str, ...]
    vectors: Tensor
    positions: tuple[int, ...]

    def total(self) -> Tensor:
        """The sum of the parts, (N, D)."""
        return self.vectors.sum(0)

    def vector(self, name: str) -> Tensor:
        """One part, (N, D)."""
        return self.vectors[self.names.index(name)]


def _kind_code(kind: str) -> str:
    return Head(kind, 0, 0).label.split(":")[0]


def mlp_label(kind: str, layer: int) -> str:
    """`enc:L1.mlp`: the MLP of the layer whose self-attention is `kind` (0-based layer)."""
    return f"{_kind_code(kind)}:L{layer + 1}.{MLP}"


@dataclass(frozen=True)
class FrozenNorm:
    """One norm as the linear map it is at one input: centring (LayerNorm), a divisor per position (T, 1) (the
    input's std or rms), gain (D,), then its shift (D,) (None without)."""

    centre: bool
    divisor: Tensor
    gain: Tensor | float
    shift: Tensor | None

    def linear(self, x: Tensor) -> Tensor:
        """The linear part on x (..., T, D): what a part (or a node's output) becomes through this norm."""
        return (x - x.mean(-1, keepdim=True) if self.centre else x) / self.divisor * self.gain

    def __call__(self, x: Tensor) -> Tensor:
        """The whole norm on a stream x (..., T, D)."""
        out = self.linear(x)
        return out if self.shift is None else out + self.shift

    def bias(self, bias: Tensor | float) -> Tensor | float:
        """Biases added so far (0.0: none), through this norm, with its shift added."""
        out = 0.0 if isinstance(bias, float) else self.linear(bias)
        return out if self.shift is None else out + self.shift


def frozen_at(norm: nn.Module, x: Tensor) -> FrozenNorm:
    """`norm` frozen at its input x (T, D); ResidualPathError for a norm that is neither a LayerNorm nor an RMSNorm."""
    x = x.float()
    found = norm_gain(norm)
    gain: Tensor | float = 1.0 if found is None else found
    if isinstance(norm, nn.LayerNorm):
        std = (x.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()
        bias = getattr(norm, "bias", None)
        return FrozenNorm(True, std, gain, None if bias is None else bias.detach().float())
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
    if eps is None:
        raise ResidualPathError(f"{type(norm).__name__} is not a LayerNorm or an RMSNorm: the stream is not taken "
                                "apart")
    return FrozenNorm(False, (x.pow(2).mean(-1, keepdim=True) + eps).sqrt(), gain, None)


def frozen_norm(norm: nn.Module | None, vectors: Tensor, total: Tensor) -> tuple[Tensor, Tensor | None]:
    """`norm` as the linear map it is at the stream `total` (N, D), applied to parts (P, N, D): (the parts through it,
    its shift (N, D) or None). LayerNorm keeps its centring; RMSNorm divides by the stream's RMS."""
    if norm is None or isinstance(norm, nn.Identity):
        return vectors, None
    frozen = frozen_at(norm, total)
    return frozen.linear(vectors), None if frozen.shift is None else frozen.shift.expand_as(total)


def _normed(norm: nn.Module | None, names: list[str], vectors: Tensor, total: Tensor) -> Tensor:
    out, shift = frozen_norm(norm, vectors, total)
    if shift is not None:
        out = out.clone()
        out[names.index(BIAS)] += shift
    return out


def _head_parts(cap: PathCapture, kind: str, layer: int, pos: Tensor) -> tuple[list[str], Tensor]:
    inputs = cap.insides.inputs[kind][layer]
    if inputs.merged is None:
        raise ResidualPathError(f"{cap.model}: the heads' outputs of {kind} layer {layer + 1} were not captured")
    weight, bias = cap.outputs[kind][layer]
    h = inputs.n_heads
    z = inputs.merged[0, pos].float().view(len(pos), h, -1)  # (N, H, Dv)
    heads = torch.einsum("nhv,dhv->hnd", z, weight.view(weight.shape[0], h, -1))
    names = [Head(kind, layer, i).label for i in range(h)]
    if bias is not None:
        return [BIAS, *names], torch.cat([bias.expand(1, len(pos), -1), heads])
    return names, heads


def _add(names: list[str], vectors: Tensor, new_names: list[str], new: Tensor) -> tuple[list[str], Tensor]:
    if BIAS in new_names:
        i = new_names.index(BIAS)
        vectors = vectors.clone()
        vectors[names.index(BIAS)] += new[i]
        new_names, new = new_names[:i] + new_names[i + 1:], torch.cat([new[:i], new[i + 1:]])
    return names + new_names, torch.cat([vectors, new])


def _embeddings(cap: PathCapture, stack: str, pos: Tensor) -> tuple[list[str], Tensor, Tensor]:
    spec = cap.path.stacks[stack]
    resid = cap.insides.residual[stack][0][0, pos].float()
    norm = spec.embedding_norm
    before = cap.record.norm_input(norm)[0, pos].float() if norm is not None else resid
    if isinstance(spec.position, Tensor):
        position = spec.position[pos].float()
    elif spec.position is not None:
        position = cap.record.positions[stack][pos].float()
    else:
        position = None
    names = [BIAS, EMBED] + ([POS] if position is not None else [])
    rows = [torch.zeros_like(before), before - (position if position is not None else 0)]
    vectors = torch.stack(rows + ([position] if position is not None else []))
    return names, (_normed(norm, names, vectors, before) if norm is not None else vectors), resid


def _stream(cap: PathCapture, stack: str, pos: Tensor, start: tuple[int, Parts] | None = None
            ) -> Iterator[tuple[int, int | None, list[str], Tensor, Tensor]]:
    """(layer, sublayer or None, names, parts (P, N, D), stream (N, D)): before each sublayer, and after each layer
    (sublayer None; layer i+1 there means the stream after layer i+1). `start` (layer, parts): the stream entering
    that layer is taken apart as those parts (they sum to it, `bias` among them) instead of the earlier layers'."""
    names, vectors, total = _embeddings(cap, stack, pos)
    residual, pre = cap.insides.residual[stack], cap.path.pre_norm
    yield 0, None, names, vectors, total
    for layer, subs in enumerate(cap.path.stacks[stack].layers):
        if start is not None and layer < start[0]:
            continue  # the parts before the start are not asked for (the stream's total resets after each layer)
        if start is not None and layer == start[0]:
            names, vectors, total = list(start[1].names), start[1].vectors, residual[layer][0, pos].float()
        kind = subs[0].name
        for s, sub in enumerate(subs):
            yield layer, s, names, vectors, total
            if sub.name == MLP:
                after = residual[layer + 1][0, pos].float() if pre else cap.record.norm_input(sub.norm)[0, pos].float()
                new_names, new = [mlp_label(kind, layer)], (after - total)[None]
            else:
                new_names, new = _head_parts(cap, sub.name, layer, pos)
                if sub.out_norm is not None:  # the heads' sum passes a norm before it joins the stream: frozen
                    if BIAS not in new_names:  # a row for the norm's shift, if it has one
                        new_names, new = [BIAS, *new_names], torch.cat([torch.zeros_like(new[:1]), new])
                    new = _normed(sub.out_norm, new_names, new, cap.record.norm_input(sub.out_norm)[0, pos].float())
            names, vectors = _add(names, vectors, new_names, new)
            if pre or sub.norm is None:
                total = total + new.sum(0)
            else:
                summed = cap.record.norm_input(sub.norm)[0, pos].float()
                vectors = _normed(sub.norm, names, vectors, summed)
                with torch.no_grad():
                    total = sub.norm(summed.to(next(sub.norm.parameters()).dtype)).float()
        total = residual[layer + 1][0, pos].float()
        yield layer + 1, None, names, vectors, total


def _positions(cap: PathCapture, stack: str, positions: Sequence[int]) -> Tensor:
    n = cap.insides.residual[stack][0].shape[1]
    bad = [p for p in positions if not 0 <= p < n]
    if bad:
        raise ResidualPathError(f"position {bad[0] + 1} is outside the {stack}'s {n} positions")
    return torch.tensor(list(positions), dtype=torch.long)


def residual_parts(cap: PathCapture, stack: str, index: int, positions: Sequence[int]) -> Parts:
    """The parts of `stack`'s residual stream `index` (0: the embeddings, i: after layer i, as `Insides.residual`) at
    `positions` (0-based); they sum to the captured stream."""
    if stack not in cap.path.stacks or not 0 <= index <= len(cap.path.stacks[stack].layers):
        raise ResidualPathError(f"{cap.model} has no {stack} residual stream {index}")
    pos = _positions(cap, stack, positions)
    for layer, sub, names, vectors, _ in _stream(cap, stack, pos):
        if sub is None and layer == index:
            return Parts(tuple(names), vectors, tuple(positions))
    raise AssertionError("unreachable")


def reading_parts(cap: PathCapture, kind: str, layer: int, positions: Sequence[int], keys: bool = False,
                  start: Parts | None = None) -> Parts:
    """The parts of what attention `kind`'s layer `layer` reads at `positions`: its queries' input (`keys` False) or
    its keys' input (a cross-attention's keys: the encoder's output through its final norm), after the sublayer's
    own norm in a pre-norm model, each norm frozen at this input. `start`: parts of the stream entering the layer
    (a cross-attention's keys: of the encoder's output as they read it) to take apart instead of the model's own
    (a dictionary's features, its error and `bias`), with the sublayers between carried as parts."""
    if kind == "cross" and keys and start is not None:
        return Parts(start.names, start.vectors, tuple(positions))
    if kind == "cross" and keys:
        stack = "encoder"
        n = len(cap.path.stacks[stack].layers)
        parts = residual_parts(cap, stack, n, positions)
        total = cap.insides.residual[stack][n][0, list(positions)].float()
        vectors = _normed(cap.path.stacks[stack].final_norm, list(parts.names), parts.vectors, total)
        return Parts(parts.names, vectors, parts.positions)
    stack, s = cap.path.sublayer(kind, layer)
    pos = _positions(cap, stack, positions)
    for at, sub, names, vectors, total in _stream(cap, stack, pos, None if start is None else (layer, start)):
        if (at, sub) == (layer, s):
            norm = cap.path.stacks[stack].layers[layer][s].norm
            vectors = _normed(norm, names, vectors, total) if cap.path.pre_norm else vectors
            return Parts(tuple(names), vectors, tuple(positions))
    raise AssertionError("unreachable")
