"""The toy English grammar's clauses: parsing English, and rendering German word order with gold alignments."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from . import toy_en_de_lexicon as lex
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
