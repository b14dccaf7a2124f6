"""One parallel example: source text, target text and (when known) the gold word alignment."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    """A source/target pair; `alignment[j]` is the source token index that target token j translates, or None."""

    source: str
    target: str
    alignment: tuple[int | None, ...] | None = None
