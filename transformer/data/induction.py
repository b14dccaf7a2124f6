"""The `induction` task: random letters in which a random-length chunk is repeated at a random offset.

A decoder-only model reads each sequence as its continuation after an empty prompt (source "", target the
sequence) and is trained on every token, so the loss falls only where a token can be predicted: inside the
repeat, from the chunk's earlier occurrence. Where the repeat starts and how long it is change from one sequence
to the next, so no position can solve it (unlike `copy`): the model has to find the earlier occurrence of the
current token and copy what followed it, the previous-token head + induction head circuit of Olsson et al. (2022).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from ..model import ConfigError, check_int
from .examples import Example

MIN_CHUNK = 3  # the shortest repeated chunk: at least two of its tokens are predictable
# 62 symbols: with few, a token's earlier occurrences are often several and the lookup is ambiguous
INDUCTION_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
INDUCTION_MIN_LEN = 24  # the task's default lengths (the TaskSpec's defaults are the string tasks')
INDUCTION_MAX_LEN = 60


@dataclass(frozen=True)
class Repeat:
    """One sequence and where its chunk stands: `first` and `second` are 0-based starts, `length` its tokens."""

    text: str
    first: int
    second: int
    length: int

    @property
    def determined(self) -> tuple[int, ...]:
        """The 0-based positions the sequence determines: the repeat's tokens after its first, each the token that
        followed the current one's only earlier occurrence (the repeat's first token and what follows it are not)."""
        return tuple(range(self.second + 1, self.second + self.length))


def draw_repeat(rng: random.Random, min_len: int, max_len: int, letters: str) -> Repeat:
    """min_len..max_len distinct random letters, except a chunk of len // 3..len // 2 of them (at least MIN_CHUNK)
    written twice, the second time at a random offset after the first (gap 0 or more)."""
    n = rng.randint(min_len, max_len)
    length = rng.randint(max(MIN_CHUNK, n // 3), n // 2)
    first = rng.randint(0, n - 2 * length)
    second = rng.randint(first + length, n - length)
    drawn = rng.sample(letters, n - length)  # distinct: the chunk is the only thing that repeats
    chars = drawn[:second] + drawn[first:first + length] + drawn[second:]
    return Repeat("".join(chars), first, second, length)


def generate_induction(seed: int, n_train: int, n_valid: int, min_len: int, max_len: int, letters: str,
                       max_generated: int) -> tuple[list[Example], list[Example], dict[str, tuple[int, ...]]]:
    """Train and validation examples (source "", target a sequence), validation sequences distinct and never in
    training, and each validation sequence's determined positions (`Repeat.determined`)."""
    check_int("min_len", min_len, 2 * MIN_CHUNK, 200)
    check_int("max_len", max_len, min_len, len(letters))
    check_int("n_train", n_train, 1, max_generated)
    check_int("n_valid", n_valid, 1, max_generated)
    if len(letters) ** min_len < 4 * n_valid:
        raise ConfigError(f"too few distinct sequences of {min_len} letters for {n_valid} validation sequences")
    rng = random.Random(seed)
    valid: dict[str, tuple[int, ...]] = {}
    while len(valid) < n_valid:
        r = draw_repeat(rng, min_len, max_len, letters)
        valid.setdefault(r.text, r.determined)
    train: list[str] = []
    while len(train) < n_train:
        text = draw_repeat(rng, min_len, max_len, letters).text
        if text not in valid:
            train.append(text)
    return [Example("", t) for t in train], [Example("", t) for t in valid], valid
