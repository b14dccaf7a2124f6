"""Two token sequences aligned by edit distance (Levenshtein: insert, delete and substitute cost 1 each), so an
input and its edit can be compared position by position even when one is longer: a swapped word is a pair, an
inserted or deleted token stands alone. Ties go to the diagonal (a substitution before an insert and a delete)."""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

Pair = tuple[int | None, int | None]  # (position in A or None: inserted in B, position in B or None: deleted from A)


@dataclass(frozen=True)
class TokenAlignment:
    """The aligned pairs of two sequences in order; every position of each appears exactly once."""

    pairs: tuple[Pair, ...]
    n_a: int
    n_b: int

    @property
    def aligned(self) -> tuple[tuple[int, int], ...]:
        """The pairs with a position on both sides (equal or substituted tokens)."""
        return tuple((a, b) for a, b in self.pairs if a is not None and b is not None)

    @property
    def only_a(self) -> tuple[int, ...]:
        """Positions of A with no partner in B (deleted)."""
        return tuple(a for a, b in self.pairs if b is None and a is not None)

    @property
    def only_b(self) -> tuple[int, ...]:
        """Positions of B with no partner in A (inserted)."""
        return tuple(b for a, b in self.pairs if a is None and b is not None)

    def b_of(self, a: int) -> int | None:
        """B's position aligned with A's position `a`, or None."""
        return next((y for x, y in self.pairs if x == a), None)

    def shifted(self, n_more: int) -> TokenAlignment:
        """This alignment followed by `n_more` positions that are the same in both (a shared continuation)."""
        tail = tuple((self.n_a + i, self.n_b + i) for i in range(n_more))
        return TokenAlignment(self.pairs + tail, self.n_a + n_more, self.n_b + n_more)


def identity_alignment(n: int) -> TokenAlignment:
    """Two sequences of the same n positions, each aligned with itself."""
    return TokenAlignment(tuple((i, i) for i in range(n)), n, n)


def align_tokens(a: Sequence[Hashable], b: Sequence[Hashable]) -> TokenAlignment:
    """The edit-distance alignment of `a` and `b` (tokens or ids)."""
    n, m = len(a), len(b)
    codes: dict[Hashable, int] = {}
    code_a = np.array([codes.setdefault(t, len(codes)) for t in a], dtype=np.int64)
    code_b = np.array([codes.setdefault(t, len(codes)) for t in b], dtype=np.int64)
    cost = np.empty((n + 1, m + 1), dtype=np.int64)
    cost[0] = np.arange(m + 1)
    offsets = np.arange(m + 1)
    for i in range(1, n + 1):  # one row at a time: a row's inserts are a running minimum (row[j - 1] + 1)
        best = np.empty(m + 1, dtype=np.int64)
        best[0] = i
        best[1:] = np.minimum(cost[i - 1, :-1] + (code_b != code_a[i - 1]), cost[i - 1, 1:] + 1)
        cost[i] = np.minimum.accumulate(best - offsets) + offsets
    table = cost.tolist()
    pairs: list[Pair] = []
    i, j = n, m
    while i or j:
        if i and j and table[i][j] == table[i - 1][j - 1] + (a[i - 1] != b[j - 1]):
            i, j = i - 1, j - 1
            pairs.append((i, j))
        elif i and table[i][j] == table[i - 1][j] + 1:
            i -= 1
            pairs.append((i, None))
        else:
            j -= 1
            pairs.append((None, j))
    return TokenAlignment(tuple(reversed(pairs)), n, m)
