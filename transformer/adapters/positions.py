"""How a model knows where a token is: a fixed table of sines and cosines, a learned table, T5's learned bias per
relative-distance bucket, or RoPE's rotation frequencies. A Hugging Face model's kind and module are what its
architecture file declares (`architectures/`); ours are read from the network. `position_scheme(adapter)` returns
the numbers with one sentence on what they do."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from .architectures import Architecture
from .architectures.spec import LEARNED, ROTARY, SINUSOIDAL, base_of, find
from .architectures.spec import RELATIVE_BUCKETS as RELATIVE
from .interface import InspectableModel


@dataclass(frozen=True)
class PositionScheme:
    """One model's positions: `table` is (positions, D) for a sinusoidal or learned table (its first `offset` rows
    are not positions), (buckets, heads) for relative buckets, (Dh / 2,) frequencies for RoPE."""

    kind: str
    table: Tensor
    sentence: str
    where: str  # the module (or buffer) it was read from
    offset: int = 0


def _rotary(network: nn.Module) -> PositionScheme | None:
    for name, buffer in network.named_buffers():
        if name.endswith("inv_freq"):
            return PositionScheme(ROTARY, buffer.detach().float(), "RoPE rotates each pair of query and key dimensions "
                                  "by the position times that pair's frequency, so a query–key dot product depends on "
                                  "their distance; nothing is added to the tokens.", name)
    return None


def _relative(network: nn.Module, arch: Architecture) -> PositionScheme | None:
    if arch.relative_bias is None:
        return None
    for modules in arch.attention(network).values():
        for module in modules:
            bias = arch.relative_bias(module)
            if bias is None:
                continue
            table = bias.table
            where = next((n for n, p in network.named_parameters() if p.data_ptr() == table.data_ptr()), "")
            return PositionScheme(RELATIVE, table.float(), "Each head adds a learned number to every score, "
                                  "picked by the bucket of the query–key distance (exact for short distances, "
                                  "logarithmic for long ones); nothing is added to the tokens.",
                                  where.removesuffix(".weight"))
    return None


def _declared_table(network: nn.Module, arch: Architecture) -> PositionScheme | None:
    """The position module the first stack that has one declares (a learned or sinusoidal table)."""
    names = {id(m): name for name, m in network.named_modules()}
    for stack in arch.stacks.values():
        module: Any = find(base_of(network), stack.position, optional=True)
        weight = getattr(module, "weight", None)
        if not isinstance(weight, Tensor):
            continue
        where = names.get(id(module), stack.position or "")
        if arch.positions == SINUSOIDAL:
            return PositionScheme(SINUSOIDAL, weight.detach().float(), "A fixed table of sines and cosines added to "
                                  "the token embeddings; this one holds the sines in the first half of the dimensions "
                                  "and the cosines in the second.", where)
        offset = int(getattr(module, "offset", 0))
        return PositionScheme(LEARNED, weight.detach().float(), "A learned vector per position added to the token "
                              "embeddings" + (f" (its first {offset} rows are not positions: position p is row "
                                              f"p + {offset})." if offset else "."), where, offset)
    return None


def _table(network: nn.Module) -> PositionScheme | None:
    """Ours: the sinusoidal table the network holds."""
    for name, buffer in network.named_buffers(recurse=False):
        if name == "positions":
            return PositionScheme(SINUSOIDAL, buffer.detach().float(), "A fixed table added to the token embeddings: "
                                  "sines in the even dimensions and cosines in the odd ones, each pair at its own "
                                  "wavelength (Vaswani et al. 2017, §3.5).", name)
    return None


def position_scheme(adapter: InspectableModel) -> PositionScheme | None:
    """The network's positions (rotary, relative buckets, or a table added to the embeddings), or None if none of
    these is found."""
    network, arch = adapter.network, getattr(adapter, "architecture", None)
    if not isinstance(arch, Architecture):  # ours
        return _rotary(network) or _table(network)
    if arch.positions == RELATIVE:
        return _relative(network, arch)
    if arch.positions in (LEARNED, SINUSOIDAL):
        return _declared_table(network, arch)
    return _rotary(network)
