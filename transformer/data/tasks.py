"""Training data: generated char tasks (reverse / copy / sort), toy English->German, and parallel corpora.

Bad parameters raise `ConfigError`; bad data raises `DataError`, whose message names the file (or
"<text>") and, when one line is at fault, its 1-based line number. Reading rules for corpora:
- TSV file: one ``source<TAB>target`` pair a line; exactly two columns, both non-empty after stripping.
  Blank lines are skipped.
- Two aligned files (plain or ``.gz``): line i of one translates line i of the other. A line blank in both
  files is skipped; blank in only one is an error. Different line counts are an error naming both counts.
- Typed text (`parse_pairs_text`): like TSV, but since a text area cannot take a TAB easily a line without a
  TAB may use ``|||``, ``=>`` or ``->`` as its separator (the first of those it contains; it must occur once).
A UTF-8 byte-order mark at the start of a file is ignored. `max_pairs` stops reading after that many pairs.
"""
from __future__ import annotations

import gzip
import random
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Sequence

from ..model import ConfigError, check_int
from .examples import Example, GoldSource
from .subword import DEFAULT_SUBWORD_VOCAB, check_vocab_size, train_subword_tokenizer
from .tokenizers import SUBWORD_KINDS, Tokenizer, build_char_tokenizer, build_word_tokenizer

TASK_NAMES = ("reverse", "copy", "sort", "toy-en-de", "corpus")
GENERATED_TASKS = ("reverse", "copy", "sort")
LETTERS = "abcdefghijklmnopqrstuvwxyz"
SMALL_CORPUS = 20  # below this many pairs, train and validate on all of them
MAX_GENERATED = 2_000_000
MAX_STRING_LEN = 200
_TEXT_SEPARATORS = ("|||", "=>", "->")


class DataError(ValueError):
    """Data a user supplied (a file or typed text) cannot be used."""


@dataclass
class Task:
    """A dataset ready for training: tokenizers, train/valid examples, a probe sentence and its recipe."""

    name: str
    level: str
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    train: list[Example]
    valid: list[Example]
    probe: str
    spec: dict[str, Any]

    @property
    def has_alignment(self) -> bool:
        """True when every example carries a gold alignment."""
        examples = self.train + self.valid
        return bool(examples) and all(ex.alignment is not None for ex in examples)

    @property
    def shares_vocabulary(self) -> bool:
        """True when source and target use one joint subword vocabulary, so a model may tie its embeddings and
        generator (the default then, in the CLI and the app)."""
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
    return tuple(accepted[source[i]] for i in gold)


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


def _open_binary(path: Path) -> BinaryIO:
    """Open a plain or gzip'd file for reading bytes; missing files become DataError."""
    try:
        return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")
    except OSError as exc:
        raise DataError(f"{path}: cannot open file ({exc.strerror or exc})") from None


def _iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, text without line ending) for each line of a UTF-8 file."""
    path = Path(path)
    number = 0
    with _open_binary(path) as fh:
        try:
            for number, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(f"{path}, line {number}: not valid UTF-8 text "
                                    f"(byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
                if number == 1:
                    line = line.removeprefix("\ufeff")
                yield number, line.rstrip("\r\n")
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(f"{path}, line {number + 1}: cannot read file, is it a valid gzip or text file? "
                            f"({exc})") from None


def _split_pair(line: str, where: str, separators: Sequence[str]) -> tuple[str, str]:
    """Split one line into a (source, target) pair on the first separator it contains."""
    sep = next((s for s in separators if s in line), None)
    if sep is None:
        shown = " or ".join(repr(s) for s in separators)
        raise DataError(f"{where}: expected 'source{separators[0]}target' (separator {shown}), "
                        f"found a single column: {line[:60]!r}")
    parts = line.split(sep)
    if len(parts) != 2:
        raise DataError(f"{where}: expected exactly 2 columns separated by {sep!r}, found {len(parts)}")
    source, target = parts[0].strip(), parts[1].strip()
    if not source or not target:
        side = "source" if not source else "target"
        raise DataError(f"{where}: the {side} is empty")
    return source, target


def _check_max_pairs(max_pairs: int | None) -> None:
    """Raise ConfigError unless max_pairs is None or a positive integer."""
    if max_pairs is not None:
        check_int("max_pairs", max_pairs, 1, 10**9)


def read_pairs_tsv(path: str | Path, max_pairs: int | None = None) -> list[tuple[str, str]]:
    """Read `source<TAB>target` lines (plain or .gz); blank lines are skipped."""
    _check_max_pairs(max_pairs)
    pairs: list[tuple[str, str]] = []
    for number, line in _iter_lines(path):
        if max_pairs is not None and len(pairs) >= max_pairs:
            break
        if line.strip():
            pairs.append(_split_pair(line, f"{path}, line {number}", ("\t",)))
    if not pairs:
        raise DataError(f"{path}: no sentence pairs found (the file is empty or blank)")
    return pairs


def read_aligned_files(src_path: str | Path, tgt_path: str | Path,
                       max_pairs: int | None = None) -> list[tuple[str, str]]:
    """Read two line-aligned files (plain or .gz): line i of one translates line i of the other."""
    _check_max_pairs(max_pairs)
    pairs: list[tuple[str, str]] = []
    src_lines, tgt_lines = _iter_lines(src_path), _iter_lines(tgt_path)
    n_src = n_tgt = 0
    while max_pairs is None or len(pairs) < max_pairs:
        src, tgt = next(src_lines, None), next(tgt_lines, None)
        n_src, n_tgt = (src[0] if src else n_src), (tgt[0] if tgt else n_tgt)
        if src is None or tgt is None:
            if src is not None or tgt is not None:
                n_src += sum(1 for _ in src_lines)
                n_tgt += sum(1 for _ in tgt_lines)
                raise DataError(f"aligned files differ in length: {src_path} has {n_src} lines, "
                                f"{tgt_path} has {n_tgt} lines (first unmatched line {min(n_src, n_tgt) + 1})")
            break
        source, target = src[1].strip(), tgt[1].strip()
        if bool(source) != bool(target):
            blank, other = (src_path, tgt_path) if not source else (tgt_path, src_path)
            raise DataError(f"{blank}, line {src[0]}: the line is empty but line {src[0]} of {other} is not")
        if source:
            pairs.append((source, target))
    if not pairs:
        raise DataError(f"{src_path} and {tgt_path}: no sentence pairs found (the files are empty)")
    return pairs


def parse_pairs_text(text: str, name: str = "<text>", max_pairs: int | None = None) -> list[tuple[str, str]]:
    """Parse typed pairs, one a line, separated by TAB (or |||, =>, -> when the line has no TAB)."""
    _check_max_pairs(max_pairs)
    pairs: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if max_pairs is not None and len(pairs) >= max_pairs:
            break
        if line.strip():
            seps = ("\t",) if "\t" in line else ("\t", *_TEXT_SEPARATORS)
            pairs.append(_split_pair(line, f"{name}, line {number}", seps))
    if not pairs:
        raise DataError(f"{name}: no sentence pairs found (the text is empty)")
    return pairs


def _read_corpus(data: Sequence[str | Path], text: str | None, max_pairs: int | None) -> list[tuple[str, str]]:
    """Pairs from typed text, one TSV file or two aligned files."""
    if text is not None and data:
        raise ConfigError("give either data files or typed text for the corpus task, not both")
    if text is not None:
        return parse_pairs_text(text, max_pairs=max_pairs)
    if len(data) == 1:
        return read_pairs_tsv(data[0], max_pairs=max_pairs)
    if len(data) == 2:
        return read_aligned_files(data[0], data[1], max_pairs=max_pairs)
    raise ConfigError(f"the corpus task needs one TSV file or two aligned files (or typed text), got {len(data)} files")


def _split_corpus(pairs: list[tuple[str, str]], seed: int, n_valid: int, valid_fraction: float
                  ) -> tuple[list[Example], list[Example], bool]:
    """Deterministic train/valid split; tiny corpora use all pairs for both (third value True)."""
    examples = [Example(s, t) for s, t in pairs]
    if len(examples) < SMALL_CORPUS:
        return examples, list(examples), True
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    n_val = min(n_valid, max(1, round(valid_fraction * len(examples))))
    valid_idx = set(order[:n_val])
    train = [ex for i, ex in enumerate(examples) if i not in valid_idx]
    valid = [examples[i] for i in sorted(valid_idx)]
    return train, valid, False


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


def make_task(name: str, *, data: Sequence[str | Path] = (), text: str | None = None, seed: int = 0,
              n_train: int | None = None, n_valid: int = 500, min_len: int = 10, max_len: int = 19,
              valid_fraction: float = 0.05, min_freq: int = 1, max_pairs: int | None = None,
              valid_data: Sequence[str | Path] = (), tokenizer: str = "bpe",
              vocab_size: int = DEFAULT_SUBWORD_VOCAB, joint: bool = True,
              tokenizers: tuple[Tokenizer, Tokenizer] | None = None) -> Task:
    """Build the named task; `spec` records the arguments so `task_from_spec` rebuilds it.

    Corpus tasks: `tokenizer` "bpe" (default, joint 8k), "unigram" or "word"; `valid_data` (one TSV or two
    aligned files) is the validation split instead of a held-out slice of `data`. `tokenizers` reuses
    already trained tokenizers (a checkpoint's) instead of training new ones.
    """
    if name not in TASK_NAMES:
        raise ConfigError(f"unknown task {name!r}; choose one of {', '.join(TASK_NAMES)}")
    check_int("seed", seed, -(2**63), 2**63 - 1)
    check_int("n_valid", n_valid, 1, MAX_GENERATED)
    if name in GENERATED_TASKS:
        n_train = 50_000 if n_train is None else n_train
        train, valid = _generate(name, seed, n_train, n_valid, min_len, max_len)
        tok = build_char_tokenizer(LETTERS)
        spec = dict(name=name, seed=seed, n_train=n_train, n_valid=n_valid, min_len=min_len, max_len=max_len)
        return Task(name, "char", tok, tok, train, valid, valid[0].source, spec)
    check_int("min_freq", min_freq, 1, 10**9)
    if name == "toy-en-de":
        from .toy_en_de import make_splits  # imported lazily: only this task needs the toy grammar

        n_train = 20_000 if n_train is None else n_train
        check_int("n_train", n_train, 1, MAX_GENERATED)
        train, valid = make_splits(n_train, n_valid, seed=seed)
        spec = dict(name=name, seed=seed, n_train=n_train, n_valid=n_valid, min_freq=min_freq)
    else:
        if not isinstance(valid_fraction, (int, float)) or not 0.0 < valid_fraction < 1.0:
            raise ConfigError(f"valid_fraction must be a number between 0 and 1, got {valid_fraction!r}")
        _check_tokenizer_options(tokenizer, vocab_size, joint)
        data = [data] if isinstance(data, (str, Path)) else list(data)
        valid_data = [valid_data] if isinstance(valid_data, (str, Path)) else list(valid_data)
        pairs = _read_corpus(data, text, max_pairs)
        if valid_data:
            train = [Example(s, t) for s, t in pairs]
            valid, valid_is_train = [Example(s, t) for s, t in _read_corpus(valid_data, None, n_valid)], False
        else:
            train, valid, valid_is_train = _split_corpus(pairs, seed, n_valid, valid_fraction)
        spec = dict(name=name, data=[str(p) for p in data], text=text, seed=seed, n_valid=n_valid,
                    valid_fraction=valid_fraction, min_freq=min_freq, max_pairs=max_pairs,
                    valid_is_train=valid_is_train, valid_data=[str(p) for p in valid_data], tokenizer=tokenizer,
                    vocab_size=vocab_size, joint=joint)
        if tokenizers is None:
            tokenizers = _corpus_tokenizers(train, tokenizer, vocab_size, joint, min_freq)
        return Task(name, "word", *tokenizers, train, valid, valid[0].source, spec)
    if tokenizers is None:
        tokenizers = (build_word_tokenizer((ex.source for ex in train), min_freq=min_freq),
                      build_word_tokenizer((ex.target for ex in train), min_freq=min_freq))
    return Task(name, "word", *tokenizers, train, valid, valid[0].source, spec)


_DERIVED_SPEC_KEYS = frozenset({"valid_is_train"})
_MAKE_TASK_KEYS = frozenset({"data", "text", "seed", "n_train", "n_valid", "min_len", "max_len",
                             "valid_fraction", "min_freq", "max_pairs", "valid_data", "tokenizer", "vocab_size",
                             "joint"})


def task_from_spec(spec: dict[str, Any], tokenizers: tuple[Tokenizer, Tokenizer] | None = None) -> Task:
    """Rebuild a task from its `spec` (e.g. one stored in a checkpoint), reusing `tokenizers` when given.

    A corpus spec written before subword tokenizers existed has no "tokenizer" key: it was word-level.
    """
    if not isinstance(spec, dict) or "name" not in spec:
        raise ConfigError('a task spec must be an object with a "name"')
    unknown = set(spec) - _MAKE_TASK_KEYS - _DERIVED_SPEC_KEYS - {"name"}
    if unknown:
        raise ConfigError(f"unknown task spec field(s): {', '.join(sorted(unknown))}")
    kwargs = {k: v for k, v in spec.items() if k in _MAKE_TASK_KEYS}
    if spec["name"] == "corpus":
        kwargs.setdefault("tokenizer", "word")
    return make_task(spec["name"], tokenizers=tokenizers, **kwargs)
