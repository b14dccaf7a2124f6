"""Training tasks: generated char tasks (reverse / copy / sort, induction), toy English->German, parallel corpora.

Bad parameters raise `ConfigError`; bad data raises `DataError` (see `corpus_files` for the reading rules).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from ..model import ConfigError, check_int
from .corpus_files import read_corpus, split_corpus
from .examples import Example, GoldSource
from .induction import INDUCTION_ALPHABET, INDUCTION_MAX_LEN, INDUCTION_MIN_LEN, generate_induction
from .recall import RECALL_MAX_LEN, RECALL_MIN_LEN, generate_recall
from .subword import check_vocab_size, train_subword_tokenizer
from .task_spec import TaskSpec
from .tokenizers import SUBWORD_KINDS, Tokenizer, build_char_tokenizer, build_word_tokenizer

TASK_NAMES = ("reverse", "copy", "sort", "induction", "recall", "toy-en-de", "corpus")
GENERATED_TASKS = ("reverse", "copy", "sort")
LETTERS = "abcdefghijklmnopqrstuvwxyz"
MAX_GENERATED = 2_000_000
MAX_STRING_LEN = 200


@dataclass
class Task:
    """A dataset ready for training: tokenizers, train/valid examples, a probe sentence and its recipe; for a stream
    task (`induction`, `recall`), `determined` maps each validation target to its determined 0-based positions (the
    tokens the stream fixes, e.g. a recalled value; the rest is random filler)."""

    name: str
    level: str
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    train: list[Example]
    valid: list[Example]
    probe: str
    spec: dict[str, Any]
    determined: dict[str, tuple[int, ...]] | None = None

    @property
    def has_alignment(self) -> bool:
        """True when every example carries a gold alignment."""
        examples = self.train + self.valid
        return bool(examples) and all(ex.alignment is not None for ex in examples)

    @property
    def shares_vocabulary(self) -> bool:
        """True when source and target use one joint vocabulary, so a model may tie its embeddings and generator
        (the default then, in the CLI and the app): a joint subword vocabulary, or `induction`, whose prompt and
        continuation are one stream of letters."""
        if self.name in ("induction", "recall"):
            return True
        return self.spec.get("joint") is True and self.spec.get("tokenizer") in SUBWORD_KINDS


def gold_alignment(task_name: str, source: str) -> tuple[int | None, ...] | None:
    """Source position each target character comes from, for reverse/copy/sort; None for other tasks.

    For sort's repeated characters this picks one copy (k-th in the output -> k-th in the source), which spells
    the reference; `gold_sources` lists every acceptable copy for scoring.
    """
    n = len(source)
    if task_name == "reverse":
        return tuple(range(n - 1, -1, -1))
    if task_name == "copy":
        return tuple(range(n))
    if task_name == "sort":
        return tuple(sorted(range(n), key=source.__getitem__))  # stable: k-th duplicate -> k-th occurrence
    return None


def gold_sources(task_name: str, source: str) -> tuple[GoldSource, ...] | None:
    """Every source position each target character may come from; the gold the alignment scores use.

    For sort, a repeated character's output cannot tell which copy was taken, so each of its copies is
    acceptable (a tuple of all its positions); single characters, reverse and copy keep `gold_alignment`.
    """
    gold = gold_alignment(task_name, source)
    if task_name != "sort" or gold is None:
        return gold
    copies: dict[str, list[int]] = {}
    for i, ch in enumerate(source):
        copies.setdefault(ch, []).append(i)
    accepted = {ch: where[0] if len(where) == 1 else tuple(where) for ch, where in copies.items()}
    return tuple(None if i is None else accepted[source[i]] for i in gold)


def _target(task_name: str, source: str) -> str:
    """Target string of a generated task."""
    if task_name == "reverse":
        return source[::-1]
    if task_name == "sort":
        return "".join(sorted(source))
    return source


def _generate(name: str, seed: int, n_train: int, n_valid: int, min_len: int, max_len: int
              ) -> tuple[list[Example], list[Example]]:
    """Random lowercase strings; valid strings are distinct and never appear in train."""
    check_int("min_len", min_len, 1, MAX_STRING_LEN)
    check_int("max_len", max_len, min_len, MAX_STRING_LEN)
    check_int("n_train", n_train, 1, MAX_GENERATED)
    check_int("n_valid", n_valid, 1, MAX_GENERATED)
    distinct = sum(len(LETTERS) ** k for k in range(min_len, max_len + 1))
    if distinct < 2 * n_valid:
        raise ConfigError(f"only {distinct} distinct strings have {min_len}-{max_len} letters: "
                          f"too few for {n_valid} validation strings plus training data; raise max_len")
    rng = random.Random(seed)
    randint, choices = rng.randint, rng.choices

    def draw() -> str:
        return "".join(choices(LETTERS, k=randint(min_len, max_len)))

    valid_set: set[str] = set()
    valid_sources: list[str] = []
    while len(valid_sources) < n_valid:
        s = draw()
        if s not in valid_set:
            valid_set.add(s)
            valid_sources.append(s)
    train_sources: list[str] = []
    while len(train_sources) < n_train:
        s = draw()
        if s not in valid_set:
            train_sources.append(s)

    def example(s: str) -> Example:
        return Example(s, _target(name, s), gold_sources(name, s))

    return [example(s) for s in train_sources], [example(s) for s in valid_sources]


CORPUS_TOKENIZERS = ("word", "bpe", "unigram")


def _corpus_tokenizers(train: list[Example], kind: str, vocab_size: int, joint: bool,
                       min_freq: int) -> tuple[Tokenizer, Tokenizer]:
    """Source and target tokenizers trained on the training split (one shared object when `joint`)."""
    if kind == "word":
        return (build_word_tokenizer((ex.source for ex in train), min_freq=min_freq),
                build_word_tokenizer((ex.target for ex in train), min_freq=min_freq))
    if joint:
        texts = (t for ex in train for t in (ex.source, ex.target))
        tok = train_subword_tokenizer(texts, kind, vocab_size, length=2 * len(train), show_progress=len(train) > 50_000)
        return tok, tok
    big = len(train) > 50_000
    return (train_subword_tokenizer((ex.source for ex in train), kind, vocab_size, length=len(train),
                                    show_progress=big),
            train_subword_tokenizer((ex.target for ex in train), kind, vocab_size, length=len(train),
                                    show_progress=big))


def _check_tokenizer_options(tokenizer: str, vocab_size: int, joint: bool) -> None:
    """Raise ConfigError / TokenizerError for tokenizer options a corpus task cannot use."""
    if tokenizer not in CORPUS_TOKENIZERS:
        raise ConfigError(f"tokenizer must be one of {', '.join(CORPUS_TOKENIZERS)}, got {tokenizer!r}")
    if not isinstance(joint, bool):
        raise ConfigError(f"joint must be true or false, got {joint!r}")
    if tokenizer in SUBWORD_KINDS:
        check_vocab_size(vocab_size)


def make_task(spec: TaskSpec, *, tokenizers: tuple[Tokenizer, Tokenizer] | None = None) -> Task:
    """Build the task `spec` describes; the task's `spec` is what a checkpoint stores so `task_from_spec`
    rebuilds it. `tokenizers` reuses already trained tokenizers (a checkpoint's) instead of training new ones."""
    if not isinstance(spec, TaskSpec):
        raise TypeError(f"make_task takes a TaskSpec, got {type(spec).__name__}")
    name, seed, n_valid = spec.name, spec.seed, spec.n_valid
    if name not in TASK_NAMES:
        raise ConfigError(f"unknown task {name!r}; choose one of {', '.join(TASK_NAMES)}")
    check_int("seed", seed, -(2**63), 2**63 - 1)
    check_int("n_valid", n_valid, 1, MAX_GENERATED)
    if name == "induction":
        if (spec.min_len, spec.max_len) == (TaskSpec.min_len, TaskSpec.max_len):  # the string tasks' lengths
            spec = replace(spec, min_len=INDUCTION_MIN_LEN, max_len=INDUCTION_MAX_LEN)
        n_train = 50_000 if spec.n_train is None else spec.n_train
        spec = replace(spec, n_train=n_train)
        train, valid, determined = generate_induction(seed, n_train, n_valid, spec.min_len, spec.max_len,
                                                      INDUCTION_ALPHABET, MAX_GENERATED)
        tok = build_char_tokenizer(INDUCTION_ALPHABET)  # the probe: a sequence with its repeat, read as the prompt
        return Task(name, "char", tok, tok, train, valid, valid[0].target, spec.to_dict(), determined)
    if name == "recall":  # one alphabet: keys, values and filler (the probe: a validation stream, as the prompt)
        if (spec.min_len, spec.max_len) == (TaskSpec.min_len, TaskSpec.max_len):
            spec = replace(spec, min_len=RECALL_MIN_LEN, max_len=RECALL_MAX_LEN)
        n_train = 50_000 if spec.n_train is None else spec.n_train
        spec = replace(spec, n_train=n_train)
        train, valid, determined = generate_recall(seed, n_train, n_valid, spec.min_len, spec.max_len,
                                                   MAX_GENERATED)
        tok = build_char_tokenizer(INDUCTION_ALPHABET)
        return Task(name, "char", tok, tok, train, valid, valid[0].target, spec.to_dict(), determined)
    if name in GENERATED_TASKS:
        n_train = 50_000 if spec.n_train is None else spec.n_train
        spec = replace(spec, n_train=n_train)
        train, valid = _generate(name, seed, n_train, n_valid, spec.min_len, spec.max_len)
        tok = build_char_tokenizer(LETTERS)
        return Task(name, "char", tok, tok, train, valid, valid[0].source, spec.to_dict())
    check_int("min_freq", spec.min_freq, 1, 10**9)
    if name == "toy-en-de":
        from .toy_en_de import make_splits  # imported lazily: only this task needs the toy grammar

        n_train = 20_000 if spec.n_train is None else spec.n_train
        spec = replace(spec, n_train=n_train)
        check_int("n_train", n_train, 1, MAX_GENERATED)
        train, valid = make_splits(n_train, n_valid, seed=seed)
        if tokenizers is None:
            tokenizers = (build_word_tokenizer((ex.source for ex in train), min_freq=spec.min_freq),
                          build_word_tokenizer((ex.target for ex in train), min_freq=spec.min_freq))
        return Task(name, "word", *tokenizers, train, valid, valid[0].source, spec.to_dict())
    if not isinstance(spec.valid_fraction, (int, float)) or not 0.0 < spec.valid_fraction < 1.0:
        raise ConfigError(f"valid_fraction must be a number between 0 and 1, got {spec.valid_fraction!r}")
    _check_tokenizer_options(spec.tokenizer, spec.vocab_size, spec.joint)
    pairs = read_corpus(spec.data, spec.text, spec.max_pairs)
    if spec.valid_data:
        train = [Example(s, t) for s, t in pairs]
        valid, valid_is_train = [Example(s, t) for s, t in read_corpus(spec.valid_data, None, n_valid)], False
    else:
        train, valid, valid_is_train = split_corpus(pairs, seed, n_valid, spec.valid_fraction)
    if tokenizers is None:
        tokenizers = _corpus_tokenizers(train, spec.tokenizer, spec.vocab_size, spec.joint, spec.min_freq)
    return Task(name, "word", *tokenizers, train, valid, valid[0].source, spec.to_dict(valid_is_train=valid_is_train))


def task_from_spec(spec: dict[str, Any], tokenizers: tuple[Tokenizer, Tokenizer] | None = None) -> Task:
    """Rebuild a task from its stored `spec` (e.g. a checkpoint's), reusing `tokenizers` when given."""
    return make_task(TaskSpec.from_dict(spec), tokenizers=tokenizers)
