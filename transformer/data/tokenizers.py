"""Char-, word- and subword-level tokenizers with one interface, stored as Hugging Face `tokenizers` JSON.

Every vocabulary starts with the specials ``<pad>``, ``<s>``, ``</s>``, ``<unk>`` at ids 0, 1, 2, 3; the
other tokens follow at ids 4, 5, ... with no gaps. The specials are plain vocabulary entries, not HF "added
tokens", so text that happens to contain ``<s>`` is never read as a special token.

``to_json`` writes ``{"kind": "char" | "word", "hf": <the HF tokenizer JSON object>}``. The HF part is a
WordLevel model (``unk_token`` ``<unk>``):
- char: no normaliser; a ``Split`` pre-tokenizer on ``[\\s\\S]`` isolates every Unicode code point, so
  ``len(split(s)) == len(s)``. Encoding is done here by a dict lookup per character (same result, faster,
  and safe for strings HF cannot take, such as lone surrogates).
- word: NFKC + lowercase normaliser, ``Whitespace`` pre-tokenizer (``\\w+|[^\\w\\s]+``, which splits
  punctuation off words); encoding goes through HF.
- bpe / unigram: a BPE or Unigram model trained by `subword.train_subword_tokenizer` (cased, NFKC only,
  ``Metaspace`` so decoding restores the spacing through HF's ``Metaspace`` decoder).
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Iterable

from tokenizers import Regex, models, normalizers, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

PAD, START, END, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS = (PAD, START, END, UNK)
TOKENIZER_KINDS = ("char", "word", "bpe", "unigram")
SUBWORD_KINDS = {"bpe": "BPE", "unigram": "Unigram"}  # kind -> HF model type
_CHAR_PATTERN = r"[\s\S]"


class TokenizerError(ValueError):
    """A tokenizer file or vocabulary is invalid."""


def _hf_safe(text: str) -> str:
    """Return `text` unchanged, or with lone surrogates replaced when HF could not accept it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _hf_tokenizer(kind: str, vocab: dict[str, int]) -> HFTokenizer:
    """Build the HF WordLevel tokenizer for `kind` over `vocab`."""
    hf = HFTokenizer(models.WordLevel(vocab, unk_token=UNK))
    if kind == "char":
        hf.pre_tokenizer = pre_tokenizers.Split(Regex(_CHAR_PATTERN), behavior="isolated")
    else:
        hf.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        hf.pre_tokenizer = pre_tokenizers.Whitespace()
    return hf


def _check_vocab(kind: str, vocab: dict[str, int]) -> None:
    """Raise TokenizerError unless specials sit at ids 0..3 and ids run 0..n-1 without gaps."""
    for i, special in enumerate(SPECIALS):
        if vocab.get(special) != i:
            raise TokenizerError(f"special token {special!r} must have id {i}, found {vocab.get(special)!r}")
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise TokenizerError("token ids must run from 0 to vocab_size - 1 without gaps or repeats")
    if kind == "char":
        bad = [tok for tok in vocab if tok not in SPECIALS and len(tok) != 1]
        if bad:
            raise TokenizerError(f"a char tokenizer holds single characters only, found {bad[0]!r}")


class Tokenizer:
    """Maps text to token ids and back; specials are pad 0, start 1, end 2, unk 3."""

    pad_id = 0
    start_id = 1
    end_id = 2
    unk_id = 3

    def __init__(self, kind: str, hf: HFTokenizer) -> None:
        """Wrap an HF tokenizer (WordLevel, BPE or Unigram model) and check its vocabulary."""
        if kind not in TOKENIZER_KINDS:
            raise TokenizerError(f"tokenizer kind must be one of {TOKENIZER_KINDS}, got {kind!r}")
        self.kind = kind
        self._hf = hf
        self._vocab: dict[str, int] = hf.get_vocab(with_added_tokens=False)
        _check_vocab(kind, self._vocab)
        self._itos = [""] * len(self._vocab)
        for tok, i in self._vocab.items():
            self._itos[i] = tok

    def __repr__(self) -> str:
        """Short description: kind and vocabulary size."""
        return f"Tokenizer(kind={self.kind!r}, vocab_size={self.vocab_size})"

    @property
    def vocab_size(self) -> int:
        """Number of tokens, specials included."""
        return len(self._itos)

    def split(self, text: str) -> list[str]:
        """Token strings the model sees for `text` (after normalisation); unknown ones keep their text."""
        if self.kind == "char":
            return list(text)
        hf = self._hf
        normalized = hf.normalizer.normalize_str(_hf_safe(text)) if hf.normalizer else _hf_safe(text)
        if self.kind in SUBWORD_KINDS:
            safe = _hf_safe(text)
            enc = hf.encode(safe, add_special_tokens=False)
            return [safe[a:b] if i == self.unk_id else tok
                    for tok, i, (a, b) in zip(enc.tokens, enc.ids, enc.offsets, strict=True)]
        if hf.pre_tokenizer is None:
            return [normalized] if normalized else []
        return [piece for piece, _ in hf.pre_tokenizer.pre_tokenize_str(normalized)]

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` without specials; unknown tokens become unk_id."""
        if self.kind == "char":
            get = self._vocab.get
            return [get(ch, 3) for ch in text]
        return self._hf.encode(_hf_safe(text), add_special_tokens=False).ids

    def encode_many(self, texts: Iterable[str]) -> list[list[int]]:
        """Encode many texts at once (batched through HF for word tokenizers)."""
        if self.kind == "char":
            get = self._vocab.get
            return [[get(ch, 3) for ch in text] for text in texts]
        batch = self._hf.encode_batch([_hf_safe(t) for t in texts], add_special_tokens=False)
        return [enc.ids for enc in batch]

    def decode(self, ids: Iterable[int]) -> str:
        """Text for `ids`, dropping pad/start/end; chars joined directly, words with spaces, subwords by HF."""
        if self.kind in SUBWORD_KINDS:
            return self._hf.decode([int(i) for i in ids if int(i) not in (0, 1, 2)], skip_special_tokens=False)
        tokens = [self.id_to_token(int(i)) for i in ids if int(i) not in (0, 1, 2)]
        return ("" if self.kind == "char" else " ").join(tokens)

    def id_to_token(self, i: int) -> str:
        """Token string for id `i`."""
        if not 0 <= i < len(self._itos):
            raise TokenizerError(f"token id {i} is outside the vocabulary (size {len(self._itos)})")
        return self._itos[i]

    def ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        """Token strings for `ids`, specials included."""
        return [self.id_to_token(int(i)) for i in ids]

    def token_to_id(self, tok: str) -> int | None:
        """Id of token string `tok`, or None when it is not in the vocabulary."""
        return self._vocab.get(tok)

    @property
    def tokens(self) -> list[str]:
        """The whole vocabulary in id order."""
        return list(self._itos)

    def to_json(self) -> str:
        """Serialise as {"kind": ..., "hf": <HF tokenizer JSON>}."""
        return json.dumps({"kind": self.kind, "hf": json.loads(self._hf.to_str())}, ensure_ascii=False)

    @staticmethod
    def from_json(text: str) -> "Tokenizer":
        """Load a tokenizer written by `to_json`; raise TokenizerError when it is malformed."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise TokenizerError(f"tokenizer file is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or "kind" not in data or "hf" not in data:
            raise TokenizerError('tokenizer JSON must be an object with "kind" and "hf" keys')
        kind, hf_data = data["kind"], data["hf"]
        if kind not in TOKENIZER_KINDS:
            raise TokenizerError(f'tokenizer "kind" must be one of {TOKENIZER_KINDS}, got {kind!r}')
        model = hf_data.get("model") if isinstance(hf_data, dict) else None
        expected = SUBWORD_KINDS.get(kind, "WordLevel")
        if not isinstance(model, dict) or model.get("type") != expected:
            raise TokenizerError(f'a {kind} tokenizer needs a Hugging Face tokenizer with a {expected} model')
        if kind == "unigram":
            vocab = model.get("vocab")
            if not isinstance(vocab, list) or not isinstance(model.get("unk_id"), int) or \
                    not 0 <= model["unk_id"] < len(vocab) or vocab[model["unk_id"]][0] != UNK:
                raise TokenizerError(f"tokenizer unk token must be {UNK!r}")
        elif model.get("unk_token") != UNK:
            raise TokenizerError(f"tokenizer unk_token must be {UNK!r}, got {model.get('unk_token')!r}")
        try:
            hf = HFTokenizer.from_str(json.dumps(hf_data))
        except Exception as exc:  # HF raises plain Exception subclasses for malformed JSON
            raise TokenizerError(f"invalid Hugging Face tokenizer JSON: {exc}") from None
        return Tokenizer(kind, hf)


def build_char_tokenizer(alphabet: Iterable[str]) -> Tokenizer:
    """Char tokenizer whose vocabulary is every distinct character of `alphabet`, in first-seen order."""
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for piece in alphabet:
        for ch in piece:
            vocab.setdefault(ch, len(vocab))
    return Tokenizer("char", _hf_tokenizer("char", vocab))


def build_word_tokenizer(texts: Iterable[str], min_freq: int = 1, max_vocab: int | None = None) -> Tokenizer:
    """Word tokenizer over `texts`: tokens seen at least `min_freq` times, most frequent first (ties A-Z).

    `max_vocab` caps the total vocabulary size, the four specials included.
    """
    if isinstance(min_freq, bool) or not isinstance(min_freq, int) or min_freq < 1:
        raise TokenizerError(f"min_freq must be an integer >= 1, got {min_freq!r}")
    if max_vocab is not None and (not isinstance(max_vocab, int) or max_vocab < len(SPECIALS)):
        raise TokenizerError(f"max_vocab must be None or an integer >= {len(SPECIALS)}, got {max_vocab!r}")
    splitter = Tokenizer("word", _hf_tokenizer("word", {tok: i for i, tok in enumerate(SPECIALS)}))
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(splitter.split(text))
    ranked = sorted((tok for tok, n in counts.items() if n >= min_freq and tok not in SPECIALS),
                    key=lambda tok: (-counts[tok], tok))
    if max_vocab is not None:
        ranked = ranked[: max_vocab - len(SPECIALS)]
    vocab = {tok: i for i, tok in enumerate((*SPECIALS, *ranked))}
    return Tokenizer("word", _hf_tokenizer("word", vocab))

