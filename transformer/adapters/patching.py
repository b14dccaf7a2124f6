"""Writing activations for one forward (activation patching): hooks borrowed for the call, removed in `finally`.

Two kinds of place, named by the model itself (`patch_points`):
- the residual stream of a stack after layer i (i = 0: the embeddings its first layer reads; i = n: after layer n,
  which for an encoder is its output position by position, the final norm being per position): a forward hook on
  the layer (a pre-hook on the first layer for i = 0) that returns the output with chosen positions replaced (a
  Hugging Face layer may return a tuple or a tensor; ours returns a tuple);
- one head's output before the attention's output projection (the concatenated head outputs, head h at columns
  h * Dh .. (h + 1) * Dh): a forward pre-hook on the projection (GPT-2's `c_proj` is a Conv1D, the same input);
  grouped-query models have one such slice per query head, so patching is per query head.
`recording_activations` reads the same places (the clean run), `patching` writes them (the corrupted runs), one
patch per batch row or for every row. Hold the model's lock (`adapter.running()`) around either.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor, nn

RESIDUAL, HEAD = "resid", "head"


@dataclass(frozen=True)
class PatchPoints:
    """Where a model's activations are read and written: each stack's layers, each attention's output projection."""

    layers: Mapping[str, Sequence[nn.Module]]  # stack ("encoder", "decoder") -> its layers in order
    projections: Mapping[str, Sequence[nn.Module]]  # attention kind -> each layer's output projection


def patch_points(adapter: Any) -> PatchPoints:
    """Where `adapter` (an `InspectableModel`) is patched: the layers of its residual stream (`residual_layers`) and its
    attention output projections (`output_projections`), as the model itself names them."""
    try:
        return PatchPoints(adapter.residual_layers(), adapter.output_projections())
    except (NotImplementedError, AttributeError) as e:
        raise NotImplementedError(f"{adapter.name}: this model's activations cannot be patched ({e})") from e


@dataclass(frozen=True)
class Patch:
    """Replace one activation at some positions of one batch row (`row` None: every row) by `value` (P, W).

    `point` RESIDUAL: `where` a stack, `index` i (0 the embeddings, n after layer n), W the model width;
    `point` HEAD: `where` an attention kind, `index` its layer, `head` the query head, W the head width."""

    point: str
    where: str
    index: int
    positions: tuple[int, ...]
    value: Tensor
    head: int | None = None
    row: int | None = None

    def __post_init__(self) -> None:
        if self.point not in (RESIDUAL, HEAD) or (self.point == HEAD) != (self.head is not None):
            raise ValueError(f"a patch is {RESIDUAL!r} (no head) or {HEAD!r} (with a head), not {self.point!r}")
        if self.value.dim() != 2 or self.value.shape[0] != len(self.positions):
            raise ValueError(f"{len(self.positions)} positions need a value (positions, width), got "
                             f"{tuple(self.value.shape)}")


@dataclass
class Activations:
    """What one run's patchable places held: residual[stack][i] (B, T, D), heads[kind][layer] (B, T, H * Dh), the
    input of each output projection (head h's output at columns h * Dh .. (h + 1) * Dh)."""

    residual: dict[str, list[Tensor]] = field(default_factory=dict)
    heads: dict[str, list[Tensor]] = field(default_factory=dict)


def _first(out: Any) -> Tensor:
    return out[0] if isinstance(out, tuple) else out


def _with_first(out: Any, x: Tensor) -> Any:
    return (x, *out[1:]) if isinstance(out, tuple) else x


def _hidden(args: tuple, kwargs: dict) -> Tensor:
    return args[0] if args else kwargs["hidden_states"]


def _with_hidden(args: tuple, kwargs: dict, x: Tensor) -> tuple[tuple, dict]:
    if args:
        return (x, *args[1:]), kwargs
    return args, {**kwargs, "hidden_states": x}


@contextmanager
def recording_activations(points: PatchPoints, detach: bool = True) -> Iterator[Activations]:
    """Every residual and every head output of the call; `detach=False` keeps them in the graph (gradients)."""
    found = Activations({stack: [] for stack in points.layers},
                        {kind: [None] * len(projs) for kind, projs in points.projections.items()})  # type: ignore
    keep = (lambda t: t.detach()) if detach else (lambda t: t)
    handles = []
    try:
        for stack, layers in points.layers.items():
            def first(module: nn.Module, args: tuple, kwargs: dict, stack: str = stack) -> None:
                found.residual[stack][:] = [keep(_hidden(args, kwargs))]

            def after(module: nn.Module, args: tuple, kwargs: dict, out: Any, stack: str = stack) -> None:
                found.residual[stack].append(keep(_first(out)))

            handles.append(layers[0].register_forward_pre_hook(first, with_kwargs=True))
            handles += [layer.register_forward_hook(after, with_kwargs=True) for layer in layers]
        for kind, projections in points.projections.items():
            for layer, proj in enumerate(projections):
                def before(module: nn.Module, args: tuple, kind: str = kind, layer: int = layer) -> None:
                    found.heads[kind][layer] = keep(args[0])

                handles.append(proj.register_forward_pre_hook(before))
        yield found
    finally:
        for handle in handles:
            handle.remove()


def _write(x: Tensor, patches: Sequence[Patch], width: int | None, offset: int | None = None,
           written: dict[int, int] | None = None) -> Tensor:
    """A copy of x (B, T, W) with each patch's value written at its rows, positions and (head) columns. With
    `offset` (a decode's call holding positions offset .. offset + T - 1), only the positions in that window are
    written, and `written` counts them per patch (by id)."""
    x = x.clone()
    for p in patches:
        if p.head is None:
            cols = slice(None)
        else:
            assert width is not None, "a head's patch is written where the head width is known"
            cols = slice(p.head * width, (p.head + 1) * width)
        value, positions = p.value.to(x.dtype), list(p.positions)
        if offset is not None:
            inside = [i for i, q in enumerate(positions) if offset <= q < offset + x.shape[1]]
            if not inside:
                continue
            value, positions = value[inside], [positions[i] - offset for i in inside]
            if written is not None:
                written[id(p)] = written.get(id(p), 0) + len(inside)
        if p.row is None:
            x[:, positions, cols] = value
        else:
            x[p.row, positions, cols] = value
    return x


@dataclass
class PatchWrites:
    """What a `patching(..., decoding=True)` block wrote: positions written per patch (by id)."""

    counts: dict[int, int] = field(default_factory=dict)

    def unwritten(self, patches: Sequence[Patch]) -> list[Patch]:
        """The patches some of whose positions the decode never reached (it ended before them)."""
        return [p for p in patches if self.counts.get(id(p), 0) < len(p.positions)]


@contextmanager
def patching(points: PatchPoints, patches: Sequence[Patch], head_counts: Mapping[str, int] | None = None, *,
             decoding: bool = False) -> Iterator[PatchWrites]:
    """While inside, every forward writes `patches` (`head_counts`: kind -> query heads per layer, for head
    patches). Positions past a run's length raise IndexError. `decoding`: the calls are a cached decode's — each
    place's first call holds positions 0 .. T - 1 (the encoder, a prompt, a decoder's start), each later call the
    positions after those seen (one a step) — so each patch is written on the call that holds its positions (a
    decoder position at the step that feeds it); what a decode never reaches is left unwritten and said in the
    `PatchWrites` this yields."""
    writes = PatchWrites()
    seen: dict[int, int] = {}  # hook id -> positions its place has been called with so far (decoding)

    def window(hook: object, x: Tensor) -> int | None:
        if not decoding:
            return None
        offset = seen.get(id(hook), 0)
        seen[id(hook)] = offset + x.shape[1]
        return offset

    residual: dict[tuple[str, int], list[Patch]] = defaultdict(list)
    heads: dict[tuple[str, int], list[Patch]] = defaultdict(list)
    for p in patches:
        (residual if p.point == RESIDUAL else heads)[(p.where, p.index)].append(p)
    handles = []
    try:
        for (stack, i), group in residual.items():
            layers = points.layers[stack]
            if not 0 <= i <= len(layers):
                raise IndexError(f"the {stack} has {len(layers)} layers: no residual {i}")
            if i == 0:
                def pre(module: nn.Module, args: tuple, kwargs: dict, group: list = group) -> tuple[tuple, dict]:
                    x = _hidden(args, kwargs)
                    return _with_hidden(args, kwargs, _write(x, group, None, window(pre, x), writes.counts))

                handles.append(layers[0].register_forward_pre_hook(pre, with_kwargs=True))
            else:
                def post(module: nn.Module, args: tuple, kwargs: dict, out: Any, group: list = group) -> Any:
                    x = _first(out)
                    return _with_first(out, _write(x, group, None, window(post, x), writes.counts))

                handles.append(layers[i - 1].register_forward_hook(post, with_kwargs=True))
        for (kind, layer), group in heads.items():
            proj = points.projections[kind][layer]
            n_heads = (head_counts or {}).get(kind)
            if not n_heads:
                raise ValueError(f"head patches of {kind} need its number of heads")

            def before(module: nn.Module, args: tuple, group: list = group, n_heads: int = n_heads) -> tuple:
                x = args[0]
                return (_write(x, group, x.shape[-1] // n_heads, window(before, x), writes.counts), *args[1:])

            handles.append(proj.register_forward_pre_hook(before))
        yield writes
    finally:
        for handle in handles:
            handle.remove()
