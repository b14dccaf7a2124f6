"""Tasks answer for any source text: the correct output and its gold alignment, without the app branching on names."""
from __future__ import annotations

from transformer.data import build_char_tokenizer, build_word_tokenizer, known_alignment, known_output
from transformer.data.toy_en_de import EXAMPLES


def test_generated_tasks_know_the_output_and_where_each_letter_comes_from():
    chars = build_char_tokenizer(["abc"])
    assert known_output("reverse", "abc") == "cba"
    assert known_alignment("reverse", "abc", chars) == (2, 1, 0)
    assert known_output("sort", "cab") == "abc"
    assert known_alignment("sort", "baba", chars) == ((1, 3), (1, 3), (0, 2), (0, 2))  # either copy of a letter


def test_the_toy_grammar_knows_its_sentences_and_nothing_else():
    example = EXAMPLES[0]
    words = build_word_tokenizer([example.source])
    assert known_output("toy-en-de", example.source) == example.target
    assert known_alignment("toy-en-de", example.source, words) == example.alignment
    assert known_output("toy-en-de", "hello world") is None
    assert known_alignment("toy-en-de", "hello world", words) is None


def test_a_model_that_reads_other_units_than_the_grammar_gets_no_gold():
    example = EXAMPLES[0]
    assert known_alignment("toy-en-de", example.source, build_char_tokenizer([example.source])) is None


def test_a_corpus_knows_no_answer():
    assert known_output("corpus", "a man rides a horse") is None
    assert known_alignment("corpus", "a man rides a horse", build_word_tokenizer(["a man"])) is None
