"""The `recall` task (associative recall): key-value pairs spread through a long stream of filler, each pair seen
again later; after its key, the answer is its value.

Each stream has its own keys and values: a key is a symbol, its value 1 to `RECALL_VALUE` symbols right after it, all
of them distinct and never in the filler (random symbols of the rest of the alphabet). Every pair appears once and
then `RECALL_ASKS` more times at random later places. A decoder-only model reads the stream as its continuation
after an empty prompt (source "", target the stream, as `induction`) and is trained on every token, so the loss
falls only where a token is determined: each value symbol of a later occurrence, after a symbol seen once before.
Where the pairs stand changes from one stream to the next and the symbols are any of the alphabet, so the model has
to find the earlier occurrence of the current symbol and copy what followed it, at any distance: a retrieval head
over the whole context, as a needle in a haystack asks (Wu et al. 2024).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from ..model import ConfigError, check_int
from .examples import Example

RECALL_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
RECALL_PAIRS = 5  # key-value pairs in a stream
RECALL_ASKS = 2  # later occurrences of each pair
RECALL_VALUE = 3  # the longest value (1..RECALL_VALUE symbols)
RECALL_FILLER = 8  # filler symbols in a stream: 8 to 16 of the others, drawn anew for each
RECALL_LONG_SHARE = 0.125  # streams of min_len..max_len; the others min_len..2 min_len
RECALL_MIN_LEN = 72  # the task's default stream lengths (the TaskSpec's defaults are the string tasks')
RECALL_MAX_LEN = 512
RECALL_LONGEST = 8192


@dataclass(frozen=True)
class Recall:
    """One stream and its determined positions (`asked`: 0-based, each value symbol of a pair's later occurrence)."""

    text: str
    asked: tuple[int, ...]


def draw_recall(rng: random.Random, min_len: int, max_len: int, pairs: int = RECALL_PAIRS,
                asks: int = RECALL_ASKS) -> Recall:
    """A stream of min_len..max_len symbols: filler with `pairs` key-value pairs (a key, then a value of
    1..RECALL_VALUE symbols), each at 1 + `asks` random places. Keys and value symbols are distinct and never in the
    filler, so each value symbol of a later occurrence follows from the pair's first."""
    short = min(max_len, 2 * min_len)  # most streams short (the lookup is learnt there), some up to max_len
    n = rng.randint(min_len, max_len if rng.random() < RECALL_LONG_SHARE else short)
    sizes = [rng.randint(1, RECALL_VALUE) for _ in range(pairs)]
    reserved = rng.sample(RECALL_ALPHABET, pairs + sum(sizes))
    chunks, at = [], pairs
    for p, size in enumerate(sizes):  # a chunk: the key, then its value
        chunks.append(reserved[p] + "".join(reserved[at:at + size]))
        at += size
    filler = [c for c in RECALL_ALPHABET if c not in reserved]
    filler = rng.sample(filler, min(rng.randint(RECALL_FILLER, 2 * RECALL_FILLER), len(filler)))
    events = [p for p in range(pairs) for _ in range(1 + asks)]
    rng.shuffle(events)
    slots = n - sum(len(chunks[p]) for p in events) + len(events)  # a chunk takes one slot
    at_slots = set(rng.sample(range(slots), len(events)))
    stream, done = "", set()
    asked: list[int] = []
    pending = iter(events)
    for slot in range(slots):
        if slot in at_slots:
            p = next(pending)
            if p in done:
                asked += range(len(stream) + 1, len(stream) + len(chunks[p]))
            done.add(p)
            stream += chunks[p]
        else:
            stream += rng.choice(filler)
    return Recall(stream, tuple(asked))


def generate_recall(seed: int, n_train: int, n_valid: int, min_len: int, max_len: int,
                    max_generated: int) -> tuple[list[Example], list[Example], dict[str, tuple[int, ...]]]:
    """Train and validation examples (source "", target a stream), validation streams distinct and never in
    training, and each validation stream's determined positions (`Recall.asked`)."""
    check_int("min_len", min_len, RECALL_PAIRS * (1 + RECALL_ASKS) * (1 + RECALL_VALUE) + 8, RECALL_LONGEST)
    check_int("max_len", max_len, min_len, RECALL_LONGEST)
    check_int("n_train", n_train, 1, max_generated)
    check_int("n_valid", n_valid, 1, max_generated)
    if n_valid > 100_000:
        raise ConfigError(f"at most 100,000 validation streams, got {n_valid}")
    rng = random.Random(seed)
    valid: dict[str, tuple[int, ...]] = {}
    while len(valid) < n_valid:
        r = draw_recall(rng, min_len, max_len)
        valid.setdefault(r.text, r.asked)
    train: list[str] = []
    while len(train) < n_train:
        text = draw_recall(rng, min_len, max_len).text
        if text not in valid:
            train.append(text)
    return [Example("", t) for t in train], [Example("", t) for t in valid], valid
