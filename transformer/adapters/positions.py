"""How a model knows where a token is, read from the model itself (never from its family's name): a fixed table of
sines and cosines, a learned table, T5's learned bias per relative-distance bucket, or RoPE's rotation frequencies.
`position_scheme(adapter)` finds the one the network has and returns its numbers with one sentence on what it does."""
from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from .interface import InspectableModel

SINUSOIDAL, LEARNED, RELATIVE, ROTARY = "sinusoidal", "learned", "relative buckets", "rotary"


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


def _relative(network: nn.Module) -> PositionScheme | None:
    for name, module in network.named_modules():
        bias = getattr(module, "relative_attention_bias", None)
        if isinstance(bias, nn.Embedding):
            return PositionScheme(RELATIVE, bias.weight.detach().float(), "Each head adds a learned number to every "
                                  "score, picked by the bucket of the query–key distance (exact for short distances, "
                                  "logarithmic for long ones); nothing is added to the tokens.",
                                  f"{name}.relative_attention_bias")
    return None


def _table(network: nn.Module) -> PositionScheme | None:
    for name, buffer in network.named_buffers(recurse=False):
        if name == "positions":  # ours
            return PositionScheme(SINUSOIDAL, buffer.detach().float(), "A fixed table added to the token embeddings: "
                                  "sines in the even dimensions and cosines in the odd ones, each pair at its own "
                                  "wavelength (Vaswani et al. 2017, §3.5).", name)
    for name, module in network.named_modules():
        if not (name.endswith("embed_positions") or name.endswith("wpe") or name.endswith("position_embeddings")):
            continue
        weight = getattr(module, "weight", None)
        if not isinstance(weight, Tensor):
            continue
        if "Sinusoidal" in type(module).__name__:
            return PositionScheme(SINUSOIDAL, weight.detach().float(), "A fixed table of sines and cosines added to "
                                  "the token embeddings; this one holds the sines in the first half of the dimensions "
                                  "and the cosines in the second.", name)
        offset = int(getattr(module, "offset", 0))
        return PositionScheme(LEARNED, weight.detach().float(), "A learned vector per position added to the token "
                              "embeddings" + (f" (its first {offset} rows are not positions: position p is row "
                                              f"p + {offset})." if offset else "."), name, offset)
    return None


def position_scheme(adapter: InspectableModel) -> PositionScheme | None:
    """The network's positions (rotary, relative buckets, or a table added to the embeddings), or None if none of
    these is found."""
    network = adapter.network
    return _rotary(network) or _relative(network) or _table(network)
