"""The residual path's types: what a family's path names (`ResidualPath`: its stacks of sublayers and norms, each
attention's W_Q / W_K / W_V) and the helper that splits a fused projection; the
per-family declarations are in `architectures/` (ours: `paths.native_path`), with the gain a frozen norm
multiplies by (`architectures.norm_gain`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from torch import Tensor, nn

MLP = "mlp"


class ResidualPathError(ValueError):
    """A model whose residual stream cannot be written as a sum of parts (said in one line)."""


@dataclass(frozen=True)
class Projections:
    """W_Q, W_K, W_V (out, D) and their biases (None without) of one attention layer, every head side by side."""

    wq: Tensor
    bq: Tensor | None
    wk: Tensor
    bk: Tensor | None
    wv: Tensor
    bv: Tensor | None
    q_norm: nn.Module | None = None  # a norm of the queries before RoPE: per head (Qwen3, Gemma 3) or over every
    k_norm: nn.Module | None = None  # head's projection at once (OLMo 2), told apart by its size


@dataclass(frozen=True)
class Sublayer:
    """One sublayer: an attention kind or MLP, its norm (None: none on this sublayer) and the norm on its output
    before the output joins the stream (OLMo 2, Gemma 2 and 3; None: none)."""

    name: str
    norm: nn.Module | None
    out_norm: nn.Module | None = None


@dataclass(frozen=True)
class StackPath:
    """One residual stream: position embedding (a module whose output it is, a (max_len, D) table, or None),
    embedding norm, layers of sublayers in order, final norm (what a cross-attention or the output head reads)."""

    position: nn.Module | Tensor | None
    embedding_norm: nn.Module | None
    layers: tuple[tuple[Sublayer, ...], ...]
    final_norm: nn.Module | None


@dataclass(frozen=True)
class ResidualPath:
    """A model's residual path: pre-norm (norm before each sublayer) or post-norm (after each sum), its stacks,
    each attention's projections and the modules handed rotary tables (RoPE families); `parallel`: each layer's
    attention and MLP read the layer's input and add to it together (GPT-NeoX, Falcon); `half_tables`: the rotary
    tables give each half's angle once (gpt-oss)."""

    pre_norm: bool
    stacks: dict[str, StackPath]
    projections: dict[str, tuple[Projections, ...]]
    attention: dict[str, tuple[nn.Module, ...]] = field(default_factory=dict)  # kind -> modules (RoPE families)
    parallel: bool = False
    half_tables: bool = False

    def sublayer(self, kind: str, layer: int) -> tuple[str, int]:
        """(stack, index of the sublayer in its layer) where attention `kind`'s layer `layer` sits."""
        for stack, path in self.stacks.items():
            if layer < len(path.layers):
                for i, sub in enumerate(path.layers[layer]):
                    if sub.name == kind:
                        return stack, i
        raise ResidualPathError(f"no {kind} layer {layer + 1} on this model's residual path")

    def norms(self) -> list[nn.Module]:
        """Every norm on the path, each once."""
        found = [p.embedding_norm for p in self.stacks.values()] + [p.final_norm for p in self.stacks.values()]
        found += [n for p in self.stacks.values() for layer in p.layers for s in layer for n in (s.norm, s.out_norm)]
        return list({id(m): m for m in found if m is not None and not isinstance(m, nn.Identity)}.values())


def fused_projections(weight: Tensor, bias: Tensor | None, sizes: Sequence[int]) -> Projections:
    """W_Q, W_K, W_V of one fused projection whose rows are q, k, v one after another (`sizes` rows each)."""
    ws = weight.split(list(sizes), 0)
    bs = (None,) * 3 if bias is None else bias.split(list(sizes), 0)
    return Projections(ws[0], bs[0], ws[1], bs[1], ws[2], bs[2])
