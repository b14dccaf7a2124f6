"""Toy English→German translation: random sentences of a small grammar (`toy_en_de_grammar` parses and renders
them with rule-based German word order and gold word alignments), train/valid splits and hand-checked examples."""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from itertools import product
from typing import Iterator

from . import toy_en_de_lexicon as lex
from .examples import Example
from .toy_en_de_grammar import MIN_WORDS, Clause, parse, render, translate
from .toy_en_de_lexicon import NounPhrase

__all__ = ["EXAMPLES", "MAX_WORDS", "MIN_WORDS", "Clause", "generate", "make_splits", "parse", "render", "translate"]

@dataclass(frozen=True)
class _Plan:
    """Which optional parts a sentence has; fixes its word count up to the noun-phrase sizes."""

    time: bool
    says: bool  # main verb takes "that ..." and no object
    main_pp: bool
    tail: str | None  # None, "sub" or "coord"
    tail_pp: bool
    weight: float

    @property
    def fixed_words(self) -> int:
        return self.time + 1 + self.main_pp + 2 * (self.tail is not None) + self.tail_pp

    @property
    def phrases(self) -> int:
        return 1 + (not self.says) + self.main_pp + 2 * (self.tail is not None) + self.tail_pp


MAX_PHRASE_WORDS = 4  # determiner + two adjectives + noun


def _plans() -> list[_Plan]:
    """Every valid plan with its prior probability."""
    plans = []
    for time, says, main_pp, tail, tail_pp in product((0, 1), (0, 1), (0, 1), (None, "sub", "coord"), (0, 1)):
        if (says and (main_pp or tail != "sub")) or (tail is None and tail_pp):
            continue
        tail_p = 1.0 if says else {None: 0.4, "sub": 0.4, "coord": 0.2}[tail]
        weight = ((0.35 if time else 0.65) * (0.15 if says else 0.85) * (1.0 if says else (0.3 if main_pp else 0.7))
                  * tail_p * (1.0 if tail is None else (0.3 if tail_pp else 0.7)))
        plans.append(_Plan(bool(time), bool(says), bool(main_pp), tail, bool(tail_pp), weight))
    return plans


MAX_WORDS = max(p.fixed_words + MAX_PHRASE_WORDS * p.phrases for p in _plans())


@lru_cache(maxsize=None)
def _plans_of_length(length: int) -> tuple[list[_Plan], list[float]]:
    """The plans that can make a sentence of exactly `length` words, and their weights."""
    plans = [p for p in _plans() if p.fixed_words + p.phrases <= length <= p.fixed_words + MAX_PHRASE_WORDS * p.phrases]
    return plans, [p.weight for p in plans]


def _phrase_sizes(rng: random.Random, phrases: int, words: int) -> list[int]:
    """Split `words` into `phrases` noun-phrase sizes between 1 and MAX_PHRASE_WORDS."""
    sizes = [1] * phrases
    for _ in range(words - phrases):
        sizes[rng.choice([i for i, size in enumerate(sizes) if size < MAX_PHRASE_WORDS])] += 1
    return sizes


_ADJECTIVE_RANK = {adj: i for i, adj in enumerate(lex.ADJECTIVES)}
_ADJECTIVE_LIST = list(lex.ADJECTIVES)


def _sample_noun_phrase(rng: random.Random, size: int, subject: bool, allow_no: bool) -> NounPhrase:
    """A noun phrase of exactly `size` words (size 1 is a bare plural like "dogs")."""
    noun = rng.choice(lex.ANIMATE_NOUNS if subject else lex.NOUNS)
    if size == 1 or (size < MAX_PHRASE_WORDS and rng.random() < 0.15):
        determiner, plural, n_adjectives = None, True, size - 1
    else:
        determiner = rng.choice(("the", "the", "the", "the", "a", "a", "my", "no")[: 8 if allow_no else 7])
        plural, n_adjectives = determiner != "a" and rng.random() < 0.3, size - 2
    adjectives = sorted(rng.sample(_ADJECTIVE_LIST, n_adjectives), key=_ADJECTIVE_RANK.__getitem__)
    return NounPhrase(determiner, tuple(adjectives), noun, plural)


def _sample_clause(rng: random.Random, sizes: Iterator[int], conjunction: str | None, time: bool, says: bool,
                   pp: bool) -> Clause:
    """A random clause whose noun phrases take their sizes from `sizes`, in English order."""
    subject = _sample_noun_phrase(rng, next(sizes), subject=True, allow_no=True)
    verb = rng.choice(lex.CLAUSE_VERBS if says else lex.TRANSITIVE_VERBS)
    obj = None if says else _sample_noun_phrase(rng, next(sizes), subject=False, allow_no=True)
    preposition = rng.choice(list(lex.PREPOSITIONS)) if pp else None
    # "no" after a preposition reads badly ("without no dog"), so prepositional objects never take it.
    prep_object = _sample_noun_phrase(rng, next(sizes), subject=False, allow_no=False) if pp else None
    time_word = rng.choice(list(lex.TIME_WORDS)) if time else None
    return Clause(subject, verb, obj, preposition, prep_object, time_word, conjunction)


def _sample_sentence(rng: random.Random, length: int) -> tuple[Clause, ...]:
    """A random sentence of exactly `length` English words."""
    plans, weights = _plans_of_length(length)
    plan = rng.choices(plans, weights)[0]
    sizes = iter(_phrase_sizes(rng, plan.phrases, length - plan.fixed_words))
    main = _sample_clause(rng, sizes, None, plan.time, plan.says, plan.main_pp)
    if plan.tail is None:
        return (main,)
    if plan.says:
        conjunction = lex.THAT[0]
    else:
        conjunction = rng.choice(list(lex.SUBORDINATORS if plan.tail == "sub" else lex.COORDINATORS))
    return main, _sample_clause(rng, sizes, conjunction, False, False, plan.tail_pp)


def _length_range(min_words: int, max_words: int) -> tuple[int, int]:
    """The feasible source-length range, or ValueError saying why there is none."""
    if min_words > max_words:
        raise ValueError(f"min_words ({min_words}) is larger than max_words ({max_words})")
    if max_words < MIN_WORDS:
        raise ValueError(f"max_words ({max_words}) is too small: the shortest sentence has {MIN_WORDS} words")
    if min_words > MAX_WORDS:
        raise ValueError(f"min_words ({min_words}) is too large: the longest sentence has {MAX_WORDS} words")
    return max(min_words, MIN_WORDS), min(max_words, MAX_WORDS)


def _stream(seed: int, min_words: int, max_words: int) -> Iterator[Example]:
    """An endless, seeded stream of examples whose source lengths are uniform over the feasible range."""
    low, high = _length_range(min_words, max_words)
    rng = random.Random(seed)
    while True:
        yield render(_sample_sentence(rng, rng.randint(low, high)))


def generate(n: int, seed: int = 0, min_words: int = 3, max_words: int = 14) -> list[Example]:
    """`n` random examples (duplicates possible) with source lengths between min_words and max_words."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    stream = _stream(seed, min_words, max_words)
    return [next(stream) for _ in range(n)]


def make_splits(n_train: int, n_valid: int, seed: int = 0, min_words: int = 3,
                max_words: int = 14) -> tuple[list[Example], list[Example]]:
    """Train and validation sets of distinct sentences; no source sentence is in both."""
    if n_train < 0 or n_valid < 0:
        raise ValueError(f"n_train and n_valid must be >= 0, got {n_train} and {n_valid}")
    total, seen = n_train + n_valid, set()
    unique: list[Example] = []
    stream = _stream(seed, min_words, max_words)
    for _ in range(20 * total + 1000):
        if len(unique) == total:
            break
        example = next(stream)
        if example.source not in seen:
            seen.add(example.source)
            unique.append(example)
    if len(unique) < total:
        raise ValueError(f"found only {len(unique)} distinct sentences of {min_words}-{max_words} words, "
                         f"fewer than the {total} asked for: widen the length range or ask for fewer")
    # Validation comes first so that it stays the same when only n_train changes.
    return unique[n_valid:], unique[:n_valid]


# Hand-written and hand-checked: alignment[j] is the index of the English word that German word j translates.
EXAMPLES: list[Example] = [
    Example("today the man sees the dog", "heute sieht der mann den hund", (0, 3, 1, 2, 4, 5)),
    Example("the man sees the dog because the woman reads the book",
            "der mann sieht den hund weil die frau das buch liest", (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 8)),
    Example("the children see an old dog with the tired women",
            "die kinder sehen einen alten hund mit den müden frauen", (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)),
    Example("tomorrow my small sister buys red flowers for the dogs",
            "morgen kauft meine kleine schwester rote blumen für die hunde", (0, 4, 1, 2, 3, 5, 6, 7, 8, 9)),
    Example("the girl opens a window but the cats eat no cake",
            "das mädchen öffnet ein fenster aber die katzen essen keinen kuchen", (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)),
    Example("often the teachers say that a big bird eats the apples with my brothers",
            "oft sagen die lehrer dass ein großer vogel die äpfel mit meinen brüdern isst",
            (0, 3, 1, 2, 4, 5, 6, 7, 9, 10, 11, 12, 13, 8)),
]
