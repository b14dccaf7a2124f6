"""Tests for char- and word-level tokenizers: specials, unknowns, splitting and JSON round trips."""
from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer as HFTokenizer

from transformer.data import (
    END,
    PAD,
    START,
    UNK,
    Tokenizer,
    TokenizerError,
    build_char_tokenizer,
    build_word_tokenizer,
)

HOSTILE = [
    "",
    "😀🇩🇪👨‍👩‍👧",
    "שלום עולם مرحبا",
    "\x00\x01\x1b[31m\x7f\u200f\u202e\ufeff",
    "a\ud800b",  # lone surrogate: not even valid UTF-8
    "line\nbreak\r\n\ttab",
    "<s></s><pad><unk>",
    "x" * 200_000,
    "ab cd, " * 30_000,
]


@pytest.fixture(scope="module")
def char_tok() -> Tokenizer:
    return build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")


@pytest.fixture(scope="module")
def word_tok() -> Tokenizer:
    return build_word_tokenizer(["The cat sat.", "the dog sat!", "A cat, a dog."])


def test_specials_have_ids_0_to_3_in_every_tokenizer(char_tok, word_tok):
    tokenizers = [char_tok, word_tok, build_char_tokenizer(""), build_word_tokenizer([]),
                  build_char_tokenizer(" <s>"), build_word_tokenizer(["<pad> <s> </s> <unk>"])]
    for tok in tokenizers:
        assert [tok.token_to_id(s) for s in (PAD, START, END, UNK)] == [0, 1, 2, 3]
        assert (tok.pad_id, tok.start_id, tok.end_id, tok.unk_id) == (0, 1, 2, 3)
        assert tok.ids_to_tokens(range(4)) == [PAD, START, END, UNK]


def test_char_vocab_is_specials_plus_alphabet(char_tok):
    assert char_tok.vocab_size == 4 + 26
    assert char_tok.encode("abz") == [4, 5, 29]
    assert build_char_tokenizer("aAb a").vocab_size == 4 + 4  # a, A, b, space: no case folding


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_encode_never_raises_and_maps_unknowns_to_unk(char_tok, word_tok, text):
    ids = char_tok.encode(text)
    assert len(ids) == len(text) == len(char_tok.split(text))
    assert all(0 <= i < char_tok.vocab_size for i in ids)
    word_ids = word_tok.encode(text)
    assert all(0 <= i < word_tok.vocab_size for i in word_ids)
    assert len(word_ids) == len(word_tok.split(text))
    assert char_tok.encode_many([text, "ab"]) == [ids, [4, 5]]
    assert word_tok.encode_many([text]) == [word_ids]


def test_text_that_looks_like_specials_is_not_special(char_tok, word_tok):
    assert 0 not in char_tok.encode("<pad>") and 1 not in word_tok.encode("<s> </s> <pad>")
    assert word_tok.split("<s>") == ["<", "s", ">"]


def test_char_split_is_exact_per_code_point(char_tok):
    text = "e\u0301 👍🏽\r\n"
    assert char_tok.split(text) == list(text)
    assert char_tok.encode("a?b") == [4, 3, 5]


def test_char_encoding_matches_the_stored_hf_pipeline(char_tok):
    hf = HFTokenizer.from_str(json.dumps(json.loads(char_tok.to_json())["hf"]))
    for text in ["hello world", "a\nb\r\n\tc", "😀é", "zz yy"]:
        assert hf.encode(text, add_special_tokens=False).ids == char_tok.encode(text)


def test_word_tokenizer_lowercases_and_splits_punctuation(word_tok):
    assert word_tok.split("The CAT, sat!") == ["the", "cat", ",", "sat", "!"]
    assert word_tok.split("ＴＨＥ　cat") == ["the", "cat"]  # NFKC folds full-width letters and spaces
    ids = word_tok.encode("The CAT, flew!")
    assert ids[3] == word_tok.unk_id and word_tok.unk_id not in ids[:3]
    assert word_tok.decode(ids) == "the cat , <unk> !"


def test_word_vocab_is_by_frequency_then_alphabetical():
    tok = build_word_tokenizer(["b a c", "c b", "c d"])
    assert tok.tokens[4:] == ["c", "b", "a", "d"]
    assert build_word_tokenizer(["b a c", "c b", "c d"], min_freq=2).tokens[4:] == ["c", "b"]
    assert build_word_tokenizer(["b a c", "c b", "c d"], max_vocab=6).tokens == [PAD, START, END, UNK, "c", "b"]


def test_word_tokenizer_rejects_bad_arguments():
    with pytest.raises(TokenizerError, match="min_freq"):
        build_word_tokenizer(["a"], min_freq=0)
    with pytest.raises(TokenizerError, match="max_vocab"):
        build_word_tokenizer(["a"], max_vocab=2)


def test_decode_drops_pad_start_end(char_tok, word_tok):
    assert char_tok.decode([1, 4, 5, 3, 2, 0, 0]) == "ab<unk>"
    assert word_tok.decode([word_tok.start_id, *word_tok.encode("the cat"), word_tok.end_id]) == "the cat"
    with pytest.raises(TokenizerError, match="outside the vocabulary"):
        char_tok.id_to_token(char_tok.vocab_size)


@pytest.mark.parametrize("which", ["char", "word"])
def test_json_round_trip_gives_identical_encodings(char_tok, word_tok, which):
    tok = char_tok if which == "char" else word_tok
    again = Tokenizer.from_json(tok.to_json())
    assert again.kind == tok.kind and again.vocab_size == tok.vocab_size and again.tokens == tok.tokens
    for text in [*HOSTILE[:7], "The dog sat, a CAT too."]:
        assert again.encode(text) == tok.encode(text)
        assert again.split(text) == tok.split(text)
    assert json.loads(tok.to_json())["kind"] == which


def _tampered(tok: Tokenizer, change) -> str:
    data = json.loads(tok.to_json())
    change(data)
    return json.dumps(data)


def _swap_pad_and_a(data: dict) -> None:
    vocab = data["hf"]["model"]["vocab"]
    vocab["<pad>"], vocab["a"] = vocab["a"], vocab["<pad>"]


@pytest.mark.parametrize("text, message", [
    ("not json", "not valid JSON"),
    ("[1, 2]", '"kind" and "hf"'),
    ('{"kind": "char"}', '"kind" and "hf"'),
    ('{"kind": "sentencepiece", "hf": {}}', "kind"),
    ('{"kind": "bpe", "hf": {}}', "BPE model"),
    ('{"kind": "char", "hf": 3}', "WordLevel"),
    ('{"kind": "word", "hf": {"model": {"type": "BPE"}}}', "WordLevel"),
])
def test_from_json_rejects_garbage(text, message):
    with pytest.raises(TokenizerError, match=message):
        Tokenizer.from_json(text)


def test_from_json_rejects_misplaced_specials_and_broken_vocab(char_tok):
    with pytest.raises(TokenizerError, match="'<pad>' must have id 0"):
        Tokenizer.from_json(_tampered(char_tok, _swap_pad_and_a))
    with pytest.raises(TokenizerError, match="'</s>' must have id 2"):
        Tokenizer.from_json(_tampered(char_tok, lambda d: d["hf"]["model"]["vocab"].pop("</s>")))
    with pytest.raises(TokenizerError, match="without gaps"):
        Tokenizer.from_json(_tampered(char_tok, lambda d: d["hf"]["model"]["vocab"].update(z=99)))
    with pytest.raises(TokenizerError, match="single characters"):
        Tokenizer.from_json(_tampered(char_tok, lambda d: d["hf"]["model"]["vocab"].update(zz=30)))
    with pytest.raises(TokenizerError, match="unk_token"):
        Tokenizer.from_json(_tampered(char_tok, lambda d: d["hf"]["model"].update(unk_token="a")))
    with pytest.raises(TokenizerError, match="Hugging Face"):
        Tokenizer.from_json(_tampered(char_tok, lambda d: d["hf"]["model"].update(vocab="oops")))
