"""Clean/corrupted pairs generated for the shipped tasks, and a names template for a user's own decoder-only model:
- induction: a repeated chunk, the target inside its second copy; the corrupted sequence has the first copy
  resampled (fresh letters), so nothing earlier says what comes next;
- reversal and sorting: a random string and the same string with one source token changed;
- recall: a key-value stream, the target the first value symbol of a later occurrence of a pair; the corrupted stream
  asks another pair's key there;
- names (IOI-style, Wang et al. 2022): "When A and B went to the store, B gave a drink to" (answer A) against the same
  sentence with two other names.
Every pair is made ready (`Pair`; inputs of two lengths aligned as `patch` aligns them); a draw whose two runs give one
answer is skipped.
"""
from __future__ import annotations

import random
import string
from collections.abc import Callable

import torch

from ...adapters import InspectableModel
from ...data.induction import INDUCTION_ALPHABET, draw_repeat
from ...data.recall import RECALL_MIN_LEN, draw_recall
from ...decode import InputError
from ..compare.token_alignment import align_tokens
from .target import Pair, pair_from_ids, pair_from_text

NAMES = ("Mary", "John", "Alice", "Bob", "Tom", "Anna", "James", "Sarah", "David", "Emma", "Paul", "Kate")
TEMPLATE = "When {a} and {b} went to the store, {b} gave a drink to"
TRIES = 8  # draws per pair wanted before giving up


def _collect(n: int, draw: Callable[[random.Random], Pair], seed: int) -> list[Pair]:
    rng, out, last = random.Random(seed), list[Pair](), ""
    for _ in range(TRIES * n):
        if len(out) == n:
            break
        try:
            out.append(draw(rng))
        except InputError as e:
            last = str(e)
    if not out:
        raise InputError(f"No pair could be made in {TRIES * n} draws; the last: {last}")
    return out


def induction_pairs(adapter: InspectableModel, n: int = 8, seed: int = 0, min_len: int = 24, max_len: int = 40
                    ) -> list[Pair]:
    """Pairs for an induction model (source empty, the sequence its continuation): the target a token of the second
    copy after its first, the corrupted sequence with the first copy resampled."""
    def draw(rng: random.Random) -> Pair:
        rep = draw_repeat(rng, min_len, max_len, INDUCTION_ALPHABET)
        at = rng.choice(rep.determined)
        unused = [c for c in INDUCTION_ALPHABET if c not in rep.text]
        fresh = "".join(rng.sample(unused, rep.length))
        corrupted = rep.text[:rep.first] + fresh + rep.text[rep.first + rep.length:]
        return _continuation(adapter, rep.text[:at], corrupted[:at])

    return _collect(n, draw, seed)


def _continuation(adapter: InspectableModel, clean: str, corrupted: str) -> Pair:
    """A pair of continuations after an empty source (the task models read their sequence as the output)."""
    prefix = adapter.decoder_prefix(adapter.tokenize_source(""))
    src = torch.zeros(1, 0, dtype=torch.long)
    tgt = [torch.tensor([[*prefix, *adapter.target_ids(text)]]) for text in (clean, corrupted)]
    if tgt[0].shape == tgt[1].shape:
        return pair_from_ids(adapter, (src, src), (tgt[0], tgt[1]), tgt[0].shape[1] - 1)
    aligned = {"decoder": align_tokens(tgt[0][0].tolist(), tgt[1][0].tolist()).aligned}  # as `patch` aligns them
    return pair_from_ids(adapter, (src, src), (tgt[0], tgt[1]), tgt[0].shape[1] - 1, aligned=aligned,
                         corrupted_position=tgt[1].shape[1] - 1)


def recall_pairs(adapter: InspectableModel, n: int = 8, seed: int = 0, min_len: int = RECALL_MIN_LEN,
                 max_len: int = 2 * RECALL_MIN_LEN) -> list[Pair]:
    """Pairs for a recall model: the stream up to the first value symbol of a pair asked again, against the same
    stream asking another pair's key there."""
    def draw(rng: random.Random) -> Pair:
        r = draw_recall(rng, min_len, max_len)
        firsts = [p for p in r.asked if p - 1 not in r.asked]  # each asked value's first symbol: its key before it
        at = rng.choice(firsts)
        others = sorted({r.text[p - 1] for p in firsts} - {r.text[at - 1]})
        if not others:
            raise InputError("one key only")
        corrupted = r.text[:at - 1] + rng.choice(others)
        return _continuation(adapter, r.text[:at], corrupted)

    return _collect(n, draw, seed)


def edit_pairs(adapter: InspectableModel, n: int = 8, seed: int = 0, min_len: int = 8, max_len: int = 12
               ) -> list[Pair]:
    """Reversal or sorting pairs: a random lowercase string and the same string with one letter changed."""
    def draw(rng: random.Random) -> Pair:
        text = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(min_len, max_len)))
        i = rng.randrange(len(text))
        other = rng.choice([c for c in string.ascii_lowercase if c != text[i]])
        return pair_from_text(adapter, text, text[:i] + other + text[i + 1:])

    return _collect(n, draw, seed)


def names_pairs(adapter: InspectableModel, n: int = 8, seed: int = 0, template: str = TEMPLATE, *,
                continuation: bool = False) -> list[Pair]:
    """IOI-style pairs for a decoder-only model: `template` with names A, B (answer A) against two other names; the
    template is the prompt (read as `patch` reads it), or with `continuation` the model's own sequence after an empty
    prompt, as the task models read theirs (the target its last position)."""
    def draw(rng: random.Random) -> Pair:
        a, b, c, d = rng.sample(NAMES, 4)
        clean, corrupted = template.format(a=a, b=b), template.format(a=c, b=d)
        if continuation:
            return _continuation(adapter, clean, corrupted)
        return pair_from_text(adapter, clean, corrupted)

    return _collect(n, draw, seed)
