"""The `recall` task (associative recall): key-value pairs spread through a long stream of filler, then one of the
keys; the answer is its value.

A key is an upper-case letter (each at most once in a sequence), its value the lower-case letter right after it, and
the filler digits. The source is the stream followed by the queried key, the target its value, so a decoder-only
model (a prefix LM) is scored on the value alone. Where the pairs stand changes from one sequence to the next, so the
model has to find the earlier occurrence of the queried key and copy what followed it: a retrieval head over the
whole context.
"""
from __future__ import annotations

import random

from ..model import ConfigError, check_int
from .examples import Example

RECALL_KEYS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
RECALL_VALUES = "abcdefghijklmnopqrstuvwxyz"
RECALL_FILLER = "0123456789"
RECALL_PAIRS = 8  # key-value pairs in a sequence
RECALL_MIN_LEN = 32  # the task's default stream lengths (the TaskSpec's defaults are the string tasks')
RECALL_MAX_LEN = 128
RECALL_LONGEST = 8192


def draw_recall(rng: random.Random, min_len: int, max_len: int, pairs: int = RECALL_PAIRS) -> Example:
    """A stream of min_len..max_len characters: filler digits with `pairs` key-value pairs at random places, then a
    key of one of them as the source's last character; the target is that key's value."""
    n = rng.randint(min_len, max_len)
    keys = rng.sample(RECALL_KEYS, pairs)
    values = [rng.choice(RECALL_VALUES) for _ in keys]
    filler = [rng.choice(RECALL_FILLER) for _ in range(n - 2 * pairs)]
    cuts = sorted(rng.sample(range(len(filler) + pairs), pairs))  # slots among the filler, one per pair
    stream: list[str] = []
    pair = 0
    for slot in range(len(filler) + pairs):
        if pair < pairs and slot == cuts[pair]:
            stream += [keys[pair], values[pair]]
            pair += 1
        else:
            stream.append(filler[slot - pair])
    asked = rng.randrange(pairs)
    return Example("".join(stream) + keys[asked], values[asked])


def generate_recall(seed: int, n_train: int, n_valid: int, min_len: int, max_len: int,
                    max_generated: int) -> tuple[list[Example], list[Example]]:
    """Train and validation examples; validation streams are distinct and never in training."""
    check_int("min_len", min_len, 4 * RECALL_PAIRS, RECALL_LONGEST)
    check_int("max_len", max_len, min_len, RECALL_LONGEST)
    check_int("n_train", n_train, 1, max_generated)
    check_int("n_valid", n_valid, 1, max_generated)
    if n_valid > 100_000:
        raise ConfigError(f"at most 100,000 validation streams, got {n_valid}")
    rng = random.Random(seed)
    valid: dict[str, Example] = {}
    while len(valid) < n_valid:
        ex = draw_recall(rng, min_len, max_len)
        valid[ex.source] = ex
    train: list[Example] = []
    while len(train) < n_train:
        ex = draw_recall(rng, min_len, max_len)
        if ex.source not in valid:
            train.append(ex)
    return train, list(valid.values())
