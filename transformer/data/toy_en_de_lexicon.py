"""Words and inflection for the toy English→German task: one German word per English word, inflected by rule."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Noun:
    """An English noun with its German gender, singular and plural (all lowercase)."""

    en: str
    en_plural: str
    gender: str  # "m", "f" or "n"
    de: str
    de_plural: str
    animate: bool

    @property
    def de_dative_plural(self) -> str:
        """The German dative plural: the plural plus -n unless it already ends in -n or -s."""
        return self.de_plural if self.de_plural.endswith(("n", "s")) else self.de_plural + "n"


@dataclass(frozen=True)
class Verb:
    """A verb in the 3rd person singular and plural; `takes_clause` verbs take "that ..." instead of an object."""

    en: str
    en_plural: str
    de: str
    de_plural: str
    takes_clause: bool = False


def _nouns(gender: str, animate: bool, rows: str) -> tuple[Noun, ...]:
    """Nouns from rows of "en en_plural de de_plural"."""
    nouns = []
    for line in rows.strip().splitlines():
        en, en_plural, de, de_plural = line.split()
        nouns.append(Noun(en, en_plural, gender, de, de_plural, animate))
    return tuple(nouns)


def _verbs(rows: str, takes_clause: bool = False) -> tuple[Verb, ...]:
    """Verbs from rows of "en en_plural de de_plural"."""
    verbs = []
    for line in rows.strip().splitlines():
        en, en_plural, de, de_plural = line.split()
        verbs.append(Verb(en, en_plural, de, de_plural, takes_clause=takes_clause))
    return tuple(verbs)


# No English noun has the same singular and plural (sheep, fish), and none is also one of the verbs (cook, watch),
# so the English form alone tells the number and the word class.
NOUNS: tuple[Noun, ...] = (
    _nouns("m", True, """
dog dogs hund hunde
man men mann männer
bird birds vogel vögel
teacher teachers lehrer lehrer
doctor doctors arzt ärzte
king kings könig könige
friend friends freund freunde
father fathers vater väter
brother brothers bruder brüder
wolf wolves wolf wölfe
""")
    + _nouns("f", True, """
woman women frau frauen
cat cats katze katzen
mouse mice maus mäuse
cow cows kuh kühe
mother mothers mutter mütter
sister sisters schwester schwestern
duck ducks ente enten
""")
    + _nouns("n", True, """
child children kind kinder
girl girls mädchen mädchen
horse horses pferd pferde
pig pigs schwein schweine
""")
    + _nouns("m", False, """
table tables tisch tische
chair chairs stuhl stühle
ball balls ball bälle
apple apples apfel äpfel
letter letters brief briefe
key keys schlüssel schlüssel
hat hats hut hüte
tree trees baum bäume
cake cakes kuchen kuchen
coat coats mantel mäntel
spoon spoons löffel löffel
""")
    + _nouns("f", False, """
flower flowers blume blumen
lamp lamps lampe lampen
cup cups tasse tassen
bottle bottles flasche flaschen
door doors tür türen
clock clocks uhr uhren
jacket jackets jacke jacken
bag bags tasche taschen
newspaper newspapers zeitung zeitungen
box boxes kiste kisten
banana bananas banane bananen
""")
    + _nouns("n", False, """
book books buch bücher
house houses haus häuser
car cars auto autos
picture pictures bild bilder
window windows fenster fenster
bed beds bett betten
egg eggs ei eier
boat boats boot boote
knife knives messer messer
song songs lied lieder
gift gifts geschenk geschenke
""")
)
ANIMATE_NOUNS: tuple[Noun, ...] = tuple(noun for noun in NOUNS if noun.animate)

# Plain transitive verbs with an accusative object: no separable prefixes, no dative objects (helfen, folgen).
TRANSITIVE_VERBS: tuple[Verb, ...] = _verbs("""
sees see sieht sehen
reads read liest lesen
hears hear hört hören
finds find findet finden
buys buy kauft kaufen
sells sell verkauft verkaufen
likes like mag mögen
loves love liebt lieben
needs need braucht brauchen
visits visit besucht besuchen
paints paint malt malen
draws draw zeichnet zeichnen
washes wash wäscht waschen
carries carry trägt tragen
holds hold hält halten
eats eat isst essen
cooks cook kocht kochen
brings bring bringt bringen
takes take nimmt nehmen
catches catch fängt fangen
throws throw wirft werfen
searches search sucht suchen
knows know kennt kennen
forgets forget vergisst vergessen
opens open öffnet öffnen
builds build baut bauen
greets greet grüßt grüßen
meets meet trifft treffen
writes write schreibt schreiben
has have hat haben
""")
CLAUSE_VERBS: tuple[Verb, ...] = _verbs("""
says say sagt sagen
thinks think denkt denken
hopes hope hofft hoffen
believes believe glaubt glauben
""", takes_clause=True)
VERBS: tuple[Verb, ...] = TRANSITIVE_VERBS + CLAUSE_VERBS

# English adjective -> German stem, listed in the usual English order (opinion, size, age, colour), so that two
# adjectives come out as "the big old dog" rather than "the old big dog".
ADJECTIVES: dict[str, str] = {
    "good": "gut", "beautiful": "schön", "ugly": "hässlich", "clever": "klug", "funny": "lustig",
    "lazy": "faul", "rich": "reich", "poor": "arm", "happy": "glücklich", "sad": "traurig", "tired": "müde",
    "hungry": "hungrig", "strong": "stark", "loud": "laut", "fast": "schnell", "slow": "langsam",
    "big": "groß", "small": "klein", "old": "alt", "young": "jung", "new": "neu",
    "red": "rot", "blue": "blau", "green": "grün", "black": "schwarz", "white": "weiß", "yellow": "gelb",
    "brown": "braun",
}
TIME_WORDS: dict[str, str] = {
    "today": "heute", "tomorrow": "morgen", "now": "jetzt", "often": "oft", "sometimes": "manchmal",
    "soon": "bald", "later": "später", "then": "dann",
}
# Subordinating conjunctions put the German verb last; "that" only follows a CLAUSE_VERB.
SUBORDINATORS: dict[str, str] = {
    "because": "weil", "when": "wenn", "although": "obwohl", "while": "während", "before": "bevor",
}
THAT: tuple[str, str] = ("that", "dass")
# Coordinating conjunctions keep main-clause order (verb second, counting the subject as the first element).
COORDINATORS: dict[str, str] = {"and": "und", "but": "aber"}
# English preposition -> (German preposition, the case it governs).
PREPOSITIONS: dict[str, tuple[str, str]] = {"with": ("mit", "dat"), "without": ("ohne", "acc"), "for": ("für", "acc")}

# Determiners: "the" is a der-word; "a"/"an", "my" and "no" are ein-words (stem + ending).
EIN_WORDS: dict[str, str] = {"a": "ein", "an": "ein", "my": "mein", "no": "kein"}
DETERMINERS: tuple[str, ...] = ("the", "a", "an", "my", "no")

CASES: tuple[str, ...] = ("nom", "acc", "dat")
# Keyed by case, then by "m", "f", "n" (singular) or "pl".
DEFINITE_ARTICLE: dict[str, dict[str, str]] = {
    "nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
    "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
    "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "den"},
}
EIN_WORD_ENDING: dict[str, dict[str, str]] = {
    "nom": {"m": "", "f": "e", "n": "", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
}
# Adjective endings: weak after der-words, mixed after ein-words, strong with no determiner (plural only here).
WEAK_ENDING: dict[str, dict[str, str]] = {
    "nom": {"m": "e", "f": "e", "n": "e", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "e", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
MIXED_ENDING: dict[str, dict[str, str]] = {
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
STRONG_PLURAL_ENDING: dict[str, str] = {"nom": "e", "acc": "e", "dat": "en"}


def inflect_adjective(stem: str, ending: str) -> str:
    """German adjective form: stem + ending, without doubling a final -e (müde + en -> müden)."""
    return stem + ending[1:] if stem.endswith("e") and ending.startswith("e") else stem + ending


@dataclass(frozen=True)
class NounPhrase:
    """Determiner (None for a bare plural), adjectives and noun; `determiner` is "the", "a", "my" or "no"."""

    determiner: str | None
    adjectives: tuple[str, ...]
    noun: Noun
    plural: bool


Pair = tuple[str, str]  # (English word, German word)


def noun_phrase_pairs(phrase: NounPhrase, case: str) -> list[Pair]:
    """The phrase's English and German words, in the (shared) order determiner, adjectives, noun."""
    noun, key = phrase.noun, "pl" if phrase.plural else phrase.noun.gender
    de_noun = (noun.de_dative_plural if case == "dat" else noun.de_plural) if phrase.plural else noun.de
    if phrase.determiner is None:
        ending = STRONG_PLURAL_ENDING[case]
    elif phrase.determiner == "the":
        ending = WEAK_ENDING[case][key]
    else:
        ending = MIXED_ENDING[case][key]
    pairs = [(adj, inflect_adjective(ADJECTIVES[adj], ending)) for adj in phrase.adjectives]
    pairs.append((noun.en_plural if phrase.plural else noun.en, de_noun))
    if phrase.determiner == "the":
        pairs.insert(0, ("the", DEFINITE_ARTICLE[case][key]))
    elif phrase.determiner is not None:
        english = "an" if phrase.determiner == "a" and pairs[0][0][0] in "aeiou" else phrase.determiner
        pairs.insert(0, (english, EIN_WORDS[phrase.determiner] + EIN_WORD_ENDING[case][key]))
    return pairs
