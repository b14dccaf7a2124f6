"""Subword tokenizers (BPE, Unigram) trained with Hugging Face `tokenizers` on a task's training text.

Cased, NFKC-normalised; a ``Metaspace`` pre-tokenizer (spaces become ``▁`` on the following piece) followed by
punctuation isolation, and the ``Metaspace`` decoder, so `Tokenizer.decode` gives back detokenized text
with the original spacing. The four specials take ids 0..3 as plain vocabulary entries (the trainer's added
tokens are dropped), like the char and word tokenizers.
"""
from __future__ import annotations

import json
from typing import Iterable

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

from ..model.config import MAX_VOCAB
from .tokenizers import SPECIALS, SUBWORD_KINDS, UNK, Tokenizer, TokenizerError

MIN_SUBWORD_VOCAB = 64
DEFAULT_SUBWORD_VOCAB = 8000


def check_vocab_size(vocab_size: object) -> int:
    """Return `vocab_size` when it is a sensible subword vocabulary size, else raise TokenizerError."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or \
            not MIN_SUBWORD_VOCAB <= vocab_size <= MAX_VOCAB:
        raise TokenizerError(f"vocab_size must be an integer between {MIN_SUBWORD_VOCAB} and {MAX_VOCAB}, "
                             f"got {vocab_size!r}")
    return vocab_size


def _untrained(kind: str) -> HFTokenizer:
    """An empty HF tokenizer of `kind` with the normaliser, pre-tokenizer and decoder set."""
    hf = HFTokenizer(models.BPE(unk_token=UNK) if kind == "bpe" else models.Unigram())
    hf.normalizer = normalizers.NFKC()
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(),
                                                pre_tokenizers.Punctuation(behavior="isolated")])
    hf.decoder = decoders.Metaspace()
    return hf


def train_subword_tokenizer(texts: Iterable[str], kind: str = "bpe", vocab_size: int = DEFAULT_SUBWORD_VOCAB,
                            length: int | None = None, show_progress: bool = False) -> Tokenizer:
    """Train a `kind` ("bpe" or "unigram") tokenizer of at most `vocab_size` tokens on `texts` (streamed)."""
    if kind not in SUBWORD_KINDS:
        raise TokenizerError(f"subword tokenizer kind must be one of {tuple(SUBWORD_KINDS)}, got {kind!r}")
    check_vocab_size(vocab_size)
    hf = _untrained(kind)
    trainer: trainers.Trainer
    if kind == "bpe":
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS),
                                      show_progress=show_progress)
    else:
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS), unk_token=UNK,
                                          show_progress=show_progress)
    hf.train_from_iterator((t for t in texts if t), trainer, length=length)
    data = json.loads(hf.to_str())
    data["added_tokens"] = []  # specials stay plain vocabulary entries: text "<s>" is never the start token
    return Tokenizer(kind, HFTokenizer.from_str(json.dumps(data)))
