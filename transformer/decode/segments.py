"""Tokens grouped into words, sentences, lines or chat turns, and a row's weights summed over each group's keys: the
long-input views' grouping (a weight on a group is the sum of its tokens' weights, so a row still sums to 1).

Groups are contiguous runs of token positions read from the pieces themselves: byte-level BPE's `Ġ`/`Ċ`/`ĉ` and
SentencePiece's `▁`/`<0x0A>` are read as the space, line break and tab they stand for. A special token (`<s>`,
`<|im_start|>`, `[CLS]`) is a group of its own, except that a chat-turn marker starts a turn."""
from __future__ import annotations

import re
from typing import Sequence

import torch
from torch import Tensor

from .trace import AttentionTrace
from .words import _is_special, merge_groups, word_groups

GROUPINGS = ("token", "word", "sentence", "line", "turn")
SENTENCE_ENDS = (".", "!", "?", "。", "！", "？")
CLOSERS = "\"')]»”’"
TURN_MARKERS = ("<|im_start|>", "<|start_header_id|>", "<start_of_turn>", "[INST]", "<|user|>", "<|assistant|>",
                "<|system|>", "<|turn|>")
TURN_ROLES = ("user:", "assistant:", "system:", "human:", "ai:", "bot:", "model:")  # a plain-text turn opens so
LABEL_CHARS = 24
_BYTES = {"Ġ": " ", "Ċ": "\n", "ĉ": "\t", "▁": " ", "<0x0A>": "\n", "<0x09>": "\t", "<0x20>": " "}


def _special(piece: str) -> bool:
    """A special token (`<s>`, `[CLS]`), not a byte-fallback piece (`<0x0A>`) nor an id past the tokenizer
    (`<id 300>`, how an adapter labels it)."""
    return _is_special(piece) and not re.fullmatch(r"<0x[0-9A-Fa-f]{2}>|<id \d+>", piece)


class GroupingError(ValueError):
    """A grouping the views do not know."""


def piece_text(piece: str) -> str:
    """The text a piece stands for: byte-level and SentencePiece marks read as the space, line break or tab."""
    if piece in _BYTES:
        return _BYTES[piece]
    if _special(piece):
        return piece
    for mark, text in _BYTES.items():
        if len(mark) == 1:
            piece = piece.replace(mark, text)
    return piece.removeprefix("##")


def _ends_sentence(text: str) -> bool:
    return text.rstrip(CLOSERS).endswith(SENTENCE_ENDS)


def _runs(pieces: Sequence[str], starts: Sequence[bool], specials_alone: bool = True) -> list[list[int]]:
    """Contiguous groups, a new one at each True of `starts` (and around each special piece if `specials_alone`)."""
    groups: list[list[int]] = []
    for i, piece in enumerate(pieces):
        alone = specials_alone and (_special(piece) or i > 0 and _special(pieces[i - 1]))
        if not groups or starts[i] or alone:
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def _turn_starts(pieces: Sequence[str], texts: Sequence[str]) -> list[bool]:
    """A chat-turn marker starts a turn; without markers, a line that opens with a role ("User:", "Assistant:").
    Specials before the first turn (a BOS) are groups of their own."""
    if any(p in TURN_MARKERS for p in pieces):
        starts = [p in TURN_MARKERS for p in pieces]
    else:
        starts, line_start = [False] * len(pieces), True
        for i, text in enumerate(texts):
            if line_start and text.strip():
                starts[i] = "".join(texts[i: i + 8]).lstrip().lower().startswith(TURN_ROLES)
                line_start = False
            if "\n" in text:
                line_start = True
    lead = 0
    while lead < len(pieces) and _special(pieces[lead]) and pieces[lead] not in TURN_MARKERS:
        starts[lead] = True
        lead += 1
    if lead < len(pieces):
        starts[lead] = True
    return starts


def segment_groups(pieces: Sequence[str], by: str) -> list[list[int]]:
    """The token positions of each group (contiguous, in order, covering every piece) for `by` in GROUPINGS."""
    if by not in GROUPINGS:
        raise GroupingError(f"tokens group by {', '.join(GROUPINGS)}, not {by!r}")
    if by == "token":
        return [[i] for i in range(len(pieces))]
    if by == "word":
        return word_groups(pieces)
    texts = [piece_text(p) for p in pieces]
    if by == "turn":
        return _runs(pieces, _turn_starts(pieces, texts), specials_alone=False)
    starts = [False] * len(pieces)
    for i in range(1, len(pieces)):
        before, here = texts[i - 1], texts[i]
        ends = by == "sentence" and _ends_sentence(before) and here[:1].isspace() and "\n" not in here
        starts[i] = "\n" in before or ends  # a line break stays with the line (and sentence) it ends
    return _runs(pieces, starts)


def segment_labels(pieces: Sequence[str], groups: Sequence[Sequence[int]]) -> list[str]:
    """A short label per group: its text, line breaks shown as ⏎, cut at LABEL_CHARS characters."""
    out = []
    for group in groups:
        text = "".join(piece_text(pieces[i]) for i in group).strip().replace("\n", " ⏎ ")
        out.append(text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…")
    return out


def group_index(groups: Sequence[Sequence[int]], n: int) -> Tensor:
    """(n,) the group of each of the first n positions (the groups must cover them)."""
    index = torch.full((n,), -1, dtype=torch.long)
    for g, group in enumerate(groups):
        members = torch.tensor([i for i in group if i < n], dtype=torch.long)
        index[members] = g
    if n and int(index.min()) < 0:
        raise GroupingError("the groups do not cover every key")
    return index


def group_sums(weights: Tensor, groups: Sequence[Sequence[int]]) -> Tensor:
    """(..., G) the sum of `weights` (..., K) over each group's keys (groups past K are 0)."""
    n = weights.shape[-1]
    index = group_index(groups, n).to(weights.device)
    out = weights.new_zeros((*weights.shape[:-1], len(groups)))
    return out.index_add_(-1, index, weights)


def merge_segments(trace: AttentionTrace, by: str) -> AttentionTrace:
    """The trace over groups (`by` in GROUPINGS) instead of pieces: keys summed, queries averaged within a group."""
    return merge_groups(trace, segment_groups(trace.source_tokens, by), segment_groups(trace.decoder_input_tokens, by))
