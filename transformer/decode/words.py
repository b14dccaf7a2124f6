"""Merge subword pieces into words (or any groups of pieces: segments.py) on an attention trace: keys summed within
a word, queries averaged within a word, so every row still sums to 1. The trace JSON keeps the pieces; this is for
the views."""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from ..model import SOURCE, TARGET
from .trace import AttentionTrace

WORD_STARTS = ("▁", "Ġ")  # SentencePiece and byte-level BPE mark a piece that starts a word
SPECIAL_SHAPES = (("<", ">"), ("[", "]"))


def _is_special(piece: str) -> bool:
    return any(piece.startswith(a) and piece.endswith(b) and len(piece) > 2 for a, b in SPECIAL_SHAPES)


def word_groups(pieces: Sequence[str]) -> list[list[int]]:
    """Indices of the pieces of each word: a piece starting with ▁/Ġ or a special starts a word; a "##" piece
    (WordPiece) or any other piece continues the current one. Specials are words of their own. Where no piece is
    marked ▁/Ġ (WordPiece: BERT, DistilBERT), every piece but a "##" one starts a word."""
    groups: list[list[int]] = []
    wordpiece = not any(piece.startswith(WORD_STARTS) for piece in pieces)
    for i, piece in enumerate(pieces):
        special = _is_special(piece)
        starts = special or piece.startswith(WORD_STARTS) or not groups or _is_special(pieces[i - 1]) or wordpiece
        if starts and not piece.startswith("##"):
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def _label(pieces: Sequence[str], group: list[int]) -> str:
    text = "".join(pieces[i].removeprefix("##") for i in group)
    return text[1:] if text.startswith(WORD_STARTS) and len(text) > 1 else text


def _matrices(pieces: Sequence[str], groups: list[list[int]] | None = None) -> tuple[tuple[str, ...], Tensor, Tensor]:
    """(group labels, averaging (G, T), summing (T, G)); groups default to words."""
    groups = word_groups(pieces) if groups is None else groups
    average = torch.zeros(len(groups), len(pieces))
    total = torch.zeros(len(pieces), len(groups))
    for w, group in enumerate(groups):
        average[w, group] = 1.0 / len(group)
        total[group, w] = 1.0
    return tuple(_label(pieces, g) for g in groups), average, total


def merge_groups(trace: AttentionTrace, source_groups: list[list[int]] | None = None,
                 decoder_groups: list[list[int]] | None = None) -> AttentionTrace:
    """The same trace over groups of pieces (default: words) instead of pieces (rows still sum to 1; future groups stay
    0), for every family: each kind's queries averaged and keys summed along its own axes."""
    src_words, src_avg, src_sum = _matrices(trace.source_tokens, source_groups)
    dec_words, dec_avg, dec_sum = _matrices(trace.decoder_input_tokens, decoder_groups)
    average, total = {SOURCE: src_avg, TARGET: dec_avg}, {SOURCE: src_sum, TARGET: dec_sum}
    spec = trace.family
    maps = {kind: average[spec.axes[kind][0]] @ trace.weights(kind) @ total[spec.axes[kind][1]] for kind in spec.kinds}
    rows = word_groups(trace.decoder_input_tokens) if decoder_groups is None else decoder_groups
    offset = next((w for w, group in enumerate(rows) if trace.step_offset in group), 0)  # the first step's group
    return AttentionTrace(src_words, dec_words, maps=maps, family=spec, head_groups=trace.head_groups,
                          step_offset=offset)


def merge_words(trace: AttentionTrace) -> AttentionTrace:
    """The same trace over words instead of pieces (`merge_groups` by words)."""
    return merge_groups(trace)
