"""A corpus for head statistics: one sentence a line (plain text or .gz), optionally with its reference after a tab
or in a second, line-aligned file; capped, and what was read is said. Bad files get one clear message."""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

MAX_CORPUS_LINES = 1000  # the default cap (Clark et al. 2019 average over 1,000 segments)
MAX_CORPUS_BYTES = 20_000_000  # read at most this much of a file (the rest is left out, and said)


class CorpusError(ValueError):
    """A corpus file that cannot be read as sentences; the message is one line for the user."""


@dataclass(frozen=True)
class Corpus:
    """The sentences read, their references (None when the corpus has none), and what was read."""

    sources: tuple[str, ...]
    references: tuple[str, ...] | None
    path: str
    lines_read: int  # non-empty lines read before the cap
    capped: bool  # more lines (or bytes) were there than were read

    def describe(self) -> str:
        """'1,000 sentences of val.en.gz (the first 1,000 lines: the cap)' — what a page or the CLI says."""
        what = f"{len(self.sources):,} sentence{'s' * (len(self.sources) != 1)} of {Path(self.path).name}"
        if self.references is not None:
            what += " with references"
        return what + (f" (the first {self.lines_read:,} lines: the cap)" if self.capped else "")


def _read_lines(path: str | Path, cap: int, max_bytes: int) -> tuple[list[str], bool]:
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: no such file")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except (OSError, EOFError) as exc:
        raise CorpusError(f"{path} cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    over = len(data) > max_bytes
    data = data[:max_bytes]
    nul = data.find(b"\x00", 0, 65536)
    if nul >= 0:
        raise CorpusError(f"{path} is binary, not text (a NUL byte at {nul:,}): give one sentence a line")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not (over and exc.start >= len(data) - 4):  # a character cut by the byte cap is only cut
            raise CorpusError(f"{path} is not UTF-8 text (byte {exc.start:,})") from None
        text = data[: exc.start].decode("utf-8")
    lines = text.split("\n")
    if over:
        lines = lines[:-1]  # the last line may be cut
    lines = [line.rstrip("\r") for line in lines if line.strip()]
    return lines[:cap], over or len(lines) > cap


def read_corpus(path: str | Path, references: str | Path | None = None, *, cap: int = MAX_CORPUS_LINES,
                max_bytes: int = MAX_CORPUS_BYTES) -> Corpus:
    """The first `cap` non-empty lines of `path` (source<TAB>reference lines are a parallel corpus), or with
    `references` a second file read line for line; CorpusError for a missing, empty, binary or misaligned file."""
    if not isinstance(cap, int) or cap < 1:
        raise CorpusError(f"the corpus cap must be a positive number of lines, got {cap!r}")
    lines, capped = _read_lines(path, cap, max_bytes)
    if not lines:
        raise CorpusError(f"{path} has no text: give one sentence a line")
    tabbed = [i for i, line in enumerate(lines) if "\t" in line]
    refs: list[str] | None = None
    if references is not None:
        if tabbed:
            raise CorpusError(f"{path} already has references after tabs (line {tabbed[0] + 1}); give one of the two")
        refs, refs_capped = _read_lines(references, cap, max_bytes)
        if len(refs) != len(lines) and not (capped and refs_capped):
            raise CorpusError(f"{path} has {len(lines):,} sentences but {references} {len(refs):,}: the files are "
                              "not aligned line for line")
        n = min(len(lines), len(refs))
        lines, refs = lines[:n], refs[:n]
    elif tabbed:
        if len(tabbed) != len(lines):
            plain = next(i for i in range(len(lines)) if "\t" not in lines[i])
            raise CorpusError(f"{path} mixes lines with and without a tab (line {plain + 1} has none): a parallel "
                              "corpus needs source<TAB>reference on every line")
        pairs = [line.split("\t", 1) for line in lines]
        lines, refs = [s for s, _ in pairs], [r.strip() for _, r in pairs]
    return Corpus(tuple(line.strip() for line in lines), None if refs is None else tuple(refs), str(path), len(lines),
                  capped)
