"""Toy English→German task: grammar rules, gold alignments, determinism, splits and lengths."""
from __future__ import annotations

import re

import pytest

from transformer.data import Example
from transformer.data import toy_en_de_lexicon as lex
from transformer.data.toy_en_de import EXAMPLES, MAX_WORDS, MIN_WORDS, generate, make_splits, translate

# Grammar-book tables, written out independently of the generator. Columns: masculine, feminine, neuter, plural.
GENDERS = ("m", "f", "n", "pl")
DEFINITE = {"nom": "der die das die", "acc": "den die das die", "dat": "dem der dem den"}
KEIN = {"nom": "kein keine kein keine", "acc": "keinen keine kein keine", "dat": "keinem keiner keinem keinen"}
ADJ_AFTER_DEFINITE = {"nom": "e e e en", "acc": "en e e en", "dat": "en en en en"}
ADJ_AFTER_EIN_WORD = {"nom": "er e es en", "acc": "en e es en", "dat": "en en en en"}
ADJ_WITHOUT_DETERMINER = {"nom": "- - - e", "acc": "- - - e", "dat": "- - - en"}
DATIVE_DETERMINERS = {"dem", "der", "den", "einem", "einer", "meinem", "meiner", "meinen", "keinem", "keiner", "keinen"}


def cell(table: dict[str, str], case: str, key: str) -> str:
    return table[case].split()[GENDERS.index(key)]


def determiner_form(english: str, case: str, key: str) -> str:
    if english == "the":
        return cell(DEFINITE, case, key)
    stem = {"a": "ein", "an": "ein", "my": "mein", "no": "kein"}[english]
    return stem + cell(KEIN, case, key).removeprefix("kein")


def adjective_form(stem: str, ending: str) -> str:
    return stem + ending[1:] if stem.endswith("e") and ending.startswith("e") else stem + ending


DE_VERBS_SINGULAR = {v.de for v in lex.VERBS}
DE_VERBS_PLURAL = {v.de_plural for v in lex.VERBS}
DE_VERBS = DE_VERBS_SINGULAR | DE_VERBS_PLURAL
DE_NOUNS = {form for n in lex.NOUNS for form in (n.de, n.de_plural, n.de_dative_plural)}
DE_TIME = set(lex.TIME_WORDS.values())
DE_SUBORDINATORS = set(lex.SUBORDINATORS.values()) | {"dass"}
DE_COORDINATORS = set(lex.COORDINATORS.values())
DE_PREPOSITIONS = {de: case for de, case in lex.PREPOSITIONS.values()}
DE_DETERMINERS = {determiner_form(d, c, g) for d in ("the", "a", "my", "no") for c in DEFINITE for g in GENDERS}
EN_NOUNS = {n.en: (n, False) for n in lex.NOUNS} | {n.en_plural: (n, True) for n in lex.NOUNS}


def is_translation(en: str, de: str) -> bool:
    """Whether the lexicon lets English word `en` translate as German word `de`."""
    nouns = any((en, de) in {(n.en, n.de), (n.en_plural, n.de_plural), (n.en_plural, n.de_dative_plural)}
                for n in lex.NOUNS)
    verbs = any((en, de) in {(v.en, v.de), (v.en_plural, v.de_plural)} for v in lex.VERBS)
    adjective = en in lex.ADJECTIVES and de in {adjective_form(lex.ADJECTIVES[en], e) for e in ("e", "en", "er", "es")}
    determiner = en in lex.DETERMINERS and de in {determiner_form(en, c, g) for c in DEFINITE for g in GENDERS}
    words = {**lex.TIME_WORDS, **lex.SUBORDINATORS, **lex.COORDINATORS, "that": "dass"}
    words |= {en_prep: de_prep for en_prep, (de_prep, _) in lex.PREPOSITIONS.items()}
    return nouns or verbs or adjective or determiner or words.get(en) == de


@pytest.fixture(scope="module")
def samples() -> list[Example]:
    return generate(2000, seed=7, min_words=3, max_words=MAX_WORDS)


def clauses(example: Example) -> list[tuple[int, list[str]]]:
    """The German clauses as (start index, words): the main clause, then the one after a conjunction, if any."""
    words = example.target.split()
    cut = next((i for i, w in enumerate(words) if w in DE_SUBORDINATORS | DE_COORDINATORS), len(words))
    return [(0, words[:cut])] + ([(cut, words[cut:])] if cut < len(words) else [])


NOT_IN_NOUN_PHRASES = DE_VERBS | DE_TIME | DE_SUBORDINATORS | DE_COORDINATORS | set(DE_PREPOSITIONS)


def noun_phrases(words: list[str]) -> list[tuple[int, int, str]]:
    """(start, noun index, case) of each noun phrase: the case a preposition governs, else nominative then
    accusative."""
    phrases, start, unmarked = [], None, 0
    for i, word in enumerate(words):
        if start is None and word not in NOT_IN_NOUN_PHRASES:
            start = i
        if word in DE_NOUNS:
            case = DE_PREPOSITIONS.get(words[start - 1]) if start > 0 else None
            if case is None:
                case, unmarked = ("nom", "acc")[unmarked], unmarked + 1
            phrases.append((start, i, case))
            start = None
    return phrases


def test_lexicon_sizes_and_word_classes_are_unambiguous() -> None:
    assert len(lex.NOUNS) >= 40 and len(lex.VERBS) >= 25 and len(lex.ADJECTIVES) >= 20
    assert len(lex.TIME_WORDS) >= 5 and len(lex.SUBORDINATORS) >= 3 and len(lex.COORDINATORS) >= 2
    english = [f for n in lex.NOUNS for f in (n.en, n.en_plural)] + [f for v in lex.VERBS for f in (v.en, v.en_plural)]
    english += [*lex.ADJECTIVES, *lex.TIME_WORDS, *lex.SUBORDINATORS, *lex.COORDINATORS, *lex.PREPOSITIONS, "that"]
    english += list(lex.DETERMINERS)
    assert len(english) == len(set(english)), "an English word belongs to two classes or has two entries"
    german_classes = [DE_NOUNS, DE_VERBS, DE_TIME, DE_SUBORDINATORS, DE_COORDINATORS, set(DE_PREPOSITIONS),
                      DE_DETERMINERS]
    assert sum(map(len, german_classes)) == len(set().union(*german_classes))


def test_words_are_lowercase_and_single_spaced(samples: list[Example]) -> None:
    for ex in samples:
        for text in (ex.source, ex.target):
            assert re.fullmatch(r"[a-zäöüß]+( [a-zäöüß]+)*", text), text


def test_main_clause_verb_is_second(samples: list[Example]) -> None:
    fronted = 0
    for ex in samples:
        _, words = clauses(ex)[0]
        assert sum(w in DE_VERBS for w in words) == 1, ex
        if words[0] in DE_TIME:
            fronted += 1
            assert words[1] in DE_VERBS, ex
        else:
            first_noun = next(i for i, w in enumerate(words) if w in DE_NOUNS)
            assert words[first_noun + 1] in DE_VERBS, ex
    assert fronted > 200


def test_subordinate_clause_verb_is_last_and_coordinate_clause_keeps_order(samples: list[Example]) -> None:
    counts = {"sub": 0, "coord": 0}
    for ex in samples:
        for start, words in clauses(ex)[1:]:
            assert sum(w in DE_VERBS for w in words) == 1, ex
            if words[0] in DE_SUBORDINATORS:
                counts["sub"] += 1
                assert words[-1] in DE_VERBS and start + len(words) == len(ex.target.split()), ex
            else:
                counts["coord"] += 1
                first_noun = next(i for i, w in enumerate(words) if w in DE_NOUNS)
                assert words[first_noun + 1] in DE_VERBS, ex
    assert counts["sub"] > 200 and counts["coord"] > 100


def test_articles_adjectives_and_nouns_agree_in_case_gender_and_number(samples: list[Example]) -> None:
    per_case: dict[str, int] = {}
    for ex in samples:
        src = ex.source.split()
        for offset, words in clauses(ex):
            for start, noun_at, case in noun_phrases(words):
                noun, plural = EN_NOUNS[src[ex.alignment[offset + noun_at]]]
                key = "pl" if plural else noun.gender
                expected_noun = (noun.de_dative_plural if case == "dat" else noun.de_plural) if plural else noun.de
                assert words[noun_at] == expected_noun, ex
                has_determiner = words[start] in DE_DETERMINERS
                english_det = src[ex.alignment[offset + start]] if has_determiner else None
                if has_determiner:
                    assert words[start] == determiner_form(english_det, case, key), ex
                    table = ADJ_AFTER_DEFINITE if english_det == "the" else ADJ_AFTER_EIN_WORD
                else:
                    assert plural, f"a bare noun phrase must be plural: {ex}"
                    table = ADJ_WITHOUT_DETERMINER
                for adj_at in range(start + has_determiner, noun_at):
                    stem = lex.ADJECTIVES[src[ex.alignment[offset + adj_at]]]
                    assert words[adj_at] == adjective_form(stem, cell(table, case, key)), ex
                per_case[case] = per_case.get(case, 0) + 1
    assert min(per_case.values()) > 200


def test_mit_takes_dative_and_masculine_objects_take_den_or_einen(samples: list[Example]) -> None:
    seen_mit = seen_masculine_object = 0
    for ex in samples:
        src, tgt = ex.source.split(), ex.target.split()
        for i, word in enumerate(tgt[:-1]):
            if word == "mit" and tgt[i + 1] in DE_DETERMINERS:
                seen_mit += 1
                assert tgt[i + 1] in DATIVE_DETERMINERS, ex
        for offset, words in clauses(ex):
            objects = [p for p in noun_phrases(words) if p[2] == "acc" and words[p[0] - 1] not in DE_PREPOSITIONS]
            for start, noun_at, _ in objects:
                noun, plural = EN_NOUNS[src[ex.alignment[offset + noun_at]]]
                if noun.gender == "m" and not plural and words[start] in DE_DETERMINERS:
                    seen_masculine_object += 1
                    assert words[start] in {"den", "einen", "meinen", "keinen"}, ex
    assert seen_mit > 100 and seen_masculine_object > 100


def test_verb_agrees_with_subject_number(samples: list[Example]) -> None:
    plural_subjects = 0
    for ex in samples:
        src = ex.source.split()
        for offset, words in clauses(ex):
            _, subject_noun, _ = noun_phrases(words)[0]
            _, plural = EN_NOUNS[src[ex.alignment[offset + subject_noun]]]
            verb = next(w for w in words if w in DE_VERBS)
            assert verb in (DE_VERBS_PLURAL if plural else DE_VERBS_SINGULAR), ex
            plural_subjects += plural
    assert plural_subjects > 200


def test_gold_alignments_pair_lexicon_translations(samples: list[Example]) -> None:
    for ex in samples:
        src, tgt = ex.source.split(), ex.target.split()
        assert ex.alignment is not None and len(ex.alignment) == len(tgt)
        aligned = [i for i in ex.alignment if i is not None]
        assert len(aligned) == len(set(aligned)), f"a source word is aligned twice: {ex}"
        for j, i in enumerate(ex.alignment):
            if i is not None:
                assert 0 <= i < len(src) and is_translation(src[i], tgt[j]), (ex, src[i], tgt[j])


def test_examples_are_hand_checked() -> None:
    hand_written = {
        "today the man sees the dog": ("heute sieht der mann den hund", (0, 3, 1, 2, 4, 5)),
        "the man sees the dog because the woman reads the book": (
            "der mann sieht den hund weil die frau das buch liest", (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 8)),
    }
    by_source = {ex.source: ex for ex in EXAMPLES}
    for source, (target, alignment) in hand_written.items():
        assert by_source[source] == Example(source, target, alignment)
    for ex in EXAMPLES:
        assert translate(ex.source) == ex
        assert all(is_translation(ex.source.split()[i], w)
                   for w, i in zip(ex.target.split(), ex.alignment, strict=True) if i is not None)


def test_german_is_a_function_of_the_english(samples: list[Example]) -> None:
    for ex in samples:
        assert translate(ex.source) == ex


@pytest.mark.parametrize("text", ["the dog sees", "dog sees the cat", "the dogs sees the cat", "a dogs see the cat",
                                  "the dog sees the cat yesterday", "the dog says the cat", "the dog sees a zebra"])
def test_translate_rejects_sentences_outside_the_grammar(text: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        translate(text)


def test_translate_names_the_unknown_word() -> None:
    with pytest.raises(ValueError, match="unknown word 'zebra'"):
        translate("the dog sees a zebra")


def test_generation_is_deterministic_by_seed() -> None:
    assert generate(200, seed=3) == generate(200, seed=3)
    assert generate(200, seed=3) != generate(200, seed=4)
    assert make_splits(300, 50, seed=5) == make_splits(300, 50, seed=5)


@pytest.mark.parametrize("low, high", [(3, 3), (5, 9), (20, MAX_WORDS), (MAX_WORDS, MAX_WORDS), (1, 100)])
def test_lengths_respect_the_range(low: int, high: int) -> None:
    lengths = {len(ex.source.split()) for ex in generate(400, seed=1, min_words=low, max_words=high)}
    assert lengths == set(range(max(low, MIN_WORDS), min(high, MAX_WORDS) + 1))


@pytest.mark.parametrize("low, high", [(9, 5), (0, 2), (MAX_WORDS + 1, MAX_WORDS + 5)])
def test_impossible_lengths_raise(low: int, high: int) -> None:
    with pytest.raises(ValueError, match="words"):
        generate(5, min_words=low, max_words=high)


def test_make_splits_are_disjoint_and_unique() -> None:
    train, valid = make_splits(20000, 500, seed=0)
    assert (len(train), len(valid)) == (20000, 500)
    train_sources = {ex.source for ex in train}
    assert len(train_sources) == len(train) and len({ex.source for ex in valid}) == len(valid)
    assert not train_sources & {ex.source for ex in valid}
    assert make_splits(100, 500, seed=0)[1] == valid  # the validation set does not depend on n_train
