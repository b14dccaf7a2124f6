"""One parallel example: source text, target text and (when known) the gold word alignment."""
from __future__ import annotations

from dataclasses import dataclass

# Where one target token comes from: a source token index, a tuple of equally acceptable indices (sort: every
# copy of a repeated character), or None for a token that translates nothing.
GoldSource = int | tuple[int, ...] | None


@dataclass(frozen=True)
class Example:
    """A source/target pair; `alignment[j]` is the source token index (or indices) target token j comes from."""

    source: str
    target: str
    alignment: tuple[GoldSource, ...] | None = None
