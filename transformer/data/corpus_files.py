"""Parallel corpora from files or typed text, and their deterministic train/valid split.

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
import io
import random
import zlib
from pathlib import Path
from typing import Iterator, Sequence

from ..model import ConfigError, check_int
from .examples import Example

SMALL_CORPUS = 20  # below this many pairs, train and validate on all of them
_TEXT_SEPARATORS = ("|||", "=>", "->")


class DataError(ValueError):
    """Data a user supplied (a file or typed text) cannot be used."""


def _open_binary(path: Path) -> io.BufferedIOBase:
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


def read_corpus(data: Sequence[str | Path], text: str | None, max_pairs: int | None) -> list[tuple[str, str]]:
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


def split_corpus(pairs: list[tuple[str, str]], seed: int, n_valid: int, valid_fraction: float
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
