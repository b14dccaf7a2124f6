"""Toy English→German translation: a small grammar, rule-based German word order and gold word alignments."""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from itertools import product
from typing import Iterator

from transformer.data import toy_en_de_lexicon as lex

from .examples import Example
from .toy_en_de_lexicon import NounPhrase

MIN_WORDS = 3  # "dogs see cats"


@dataclass(frozen=True)
class Clause:
    """One clause; `conjunction` is None for the main clause, else a subordinator, "that" or a coordinator."""

    subject: NounPhrase
    verb: lex.Verb
    obj: NounPhrase | None = None
    preposition: str | None = None
    prep_object: NounPhrase | None = None
    time: str | None = None
    conjunction: str | None = None


def _clause_parts(clause: Clause) -> tuple[dict[str, list[lex.Pair]], list[str]]:
    """The clause's parts by name, and the German order of the part names (English order is fixed)."""
    verb = clause.verb
    parts = {"subject": lex.noun_phrase_pairs(clause.subject, "nom"),
             "verb": [(verb.en_plural, verb.de_plural) if clause.subject.plural else (verb.en, verb.de)]}
    if clause.conjunction is not None:
        conj = clause.conjunction
        german = lex.THAT[1] if conj == lex.THAT[0] else {**lex.SUBORDINATORS, **lex.COORDINATORS}[conj]
        parts["conjunction"] = [(conj, german)]
    if clause.time is not None:
        parts["time"] = [(clause.time, lex.TIME_WORDS[clause.time])]
    if clause.obj is not None:
        parts["object"] = lex.noun_phrase_pairs(clause.obj, "acc")
    if clause.preposition is not None and clause.prep_object is not None:
        german, case = lex.PREPOSITIONS[clause.preposition]
        parts["pp"] = [(clause.preposition, german)] + lex.noun_phrase_pairs(clause.prep_object, case)
    if clause.conjunction is None:  # verb second, after the time word or the subject
        order = ("time", "verb", "subject", "object", "pp") if clause.time else ("subject", "verb", "object", "pp")
    elif clause.conjunction in lex.COORDINATORS:
        order = ("conjunction", "subject", "verb", "object", "pp")
    else:  # subordinate clause: verb last
        order = ("conjunction", "subject", "object", "pp", "verb")
    return parts, [name for name in order if name in parts]


def render(clauses: tuple[Clause, ...]) -> Example:
    """The English sentence, its German translation and the gold alignment of a parsed sentence."""
    source: list[str] = []
    target: list[str] = []
    alignment: list[int | None] = []
    for clause in clauses:
        parts, german_order = _clause_parts(clause)
        start: dict[str, int] = {}
        for name in ("conjunction", "time", "subject", "verb", "object", "pp"):
            if name in parts:
                start[name] = len(source)
                source.extend(en for en, _ in parts[name])
        for name in german_order:
            target.extend(de for _, de in parts[name])
            alignment.extend(range(start[name], start[name] + len(parts[name])))
    return Example(" ".join(source), " ".join(target), tuple(alignment))


class _Reader:
    """A cursor over the words of an English sentence, for the parser."""

    def __init__(self, text: str) -> None:
        self.text, self.words, self.i = text, text.lower().split(), 0

    def peek(self) -> str | None:
        return self.words[self.i] if self.i < len(self.words) else None

    def take(self) -> str:
        self.i += 1
        return self.words[self.i - 1]

    def error(self, expected: str) -> ValueError:
        word = self.peek()
        if word is None:
            return ValueError(f"expected {expected} but the sentence {self.text!r} ends")
        nouns, verbs = _english_index()
        known = word in nouns or word in verbs or any(word in words for words in _OTHER_ENGLISH_WORDS)
        found = f"{'' if known else 'the unknown word '}{word!r} (word {self.i + 1})"
        return ValueError(f"expected {expected} but found {found} in {self.text!r}")


_OTHER_ENGLISH_WORDS = (lex.ADJECTIVES, lex.TIME_WORDS, lex.SUBORDINATORS, lex.COORDINATORS, lex.PREPOSITIONS,
                        lex.DETERMINERS, lex.THAT[:1])


@lru_cache(maxsize=1)
def _english_index() -> tuple[dict[str, tuple[lex.Noun, bool]], dict[str, tuple[lex.Verb, bool]]]:
    """English noun and verb forms -> (entry, is plural)."""
    nouns = {n.en: (n, False) for n in lex.NOUNS} | {n.en_plural: (n, True) for n in lex.NOUNS}
    verbs = {v.en: (v, False) for v in lex.VERBS} | {v.en_plural: (v, True) for v in lex.VERBS}
    return nouns, verbs


def _parse_noun_phrase(reader: _Reader) -> NounPhrase:
    """determiner? adjective* noun; a bare noun must be plural and "a"/"an" singular."""
    determiner = reader.take() if reader.peek() in lex.DETERMINERS else None
    adjectives = []
    while reader.peek() in lex.ADJECTIVES:
        adjectives.append(reader.take())
    nouns, _ = _english_index()
    if reader.peek() not in nouns:
        raise reader.error("a noun")
    noun, plural = nouns[reader.take()]
    if determiner is None and not plural:
        raise ValueError(f"the singular noun {noun.en!r} needs a determiner ({', '.join(lex.DETERMINERS)})")
    if determiner in ("a", "an") and plural:
        raise ValueError(f"{determiner!r} cannot go with the plural noun {noun.en_plural!r}")
    return NounPhrase("a" if determiner == "an" else determiner, tuple(adjectives), noun, plural)


def _parse_clause(reader: _Reader, conjunction: str | None) -> Clause:
    """[time] subject verb (object [preposition noun-phrase] | nothing, for a verb that takes "that")."""
    time = reader.take() if conjunction is None and reader.peek() in lex.TIME_WORDS else None
    subject = _parse_noun_phrase(reader)
    _, verbs = _english_index()
    if reader.peek() not in verbs:
        raise reader.error("a verb")
    verb, plural = verbs[reader.take()]
    if plural != subject.plural:
        raise ValueError(f"the verb {(verb.en_plural if plural else verb.en)!r} does not agree with its subject")
    if verb.takes_clause:
        if conjunction is not None:
            raise ValueError(f"{verb.en!r} can only be the verb of the main clause")
        return Clause(subject, verb, time=time)
    obj = _parse_noun_phrase(reader)
    if reader.peek() not in lex.PREPOSITIONS:
        return Clause(subject, verb, obj, time=time, conjunction=conjunction)
    preposition = reader.take()
    return Clause(subject, verb, obj, preposition, _parse_noun_phrase(reader), time, conjunction)


def parse(text: str) -> tuple[Clause, ...]:
    """Parse an English sentence of the toy grammar; raises ValueError saying what was expected where."""
    reader = _Reader(text)
    main = _parse_clause(reader, None)
    clauses = [main]
    if main.verb.takes_clause:
        if reader.peek() != lex.THAT[0]:
            raise reader.error(f"{lex.THAT[0]!r} after {main.verb.en!r}")
        clauses.append(_parse_clause(reader, reader.take()))
    elif reader.peek() in lex.SUBORDINATORS or reader.peek() in lex.COORDINATORS:
        clauses.append(_parse_clause(reader, reader.take()))
    if reader.peek() is not None:
        raise reader.error("the end of the sentence")
    return tuple(clauses)


def translate(text: str) -> Example:
    """The gold German translation and alignment of an English sentence (lowercased; "a"/"an" normalised)."""
    return render(parse(text))


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
    total, seen, unique = n_train + n_valid, set(), []
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
