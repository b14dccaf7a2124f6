"""Tests for task data: generated char tasks, corpus files and typed pairs, and their error messages."""
from __future__ import annotations

import gzip
import os
import sys
import types
from pathlib import Path

import pytest
import torch

from tests.helpers import SHARED_DATA
from transformer.analysis import accepted
from transformer.data import (
    TASK_NAMES,
    DataError,
    Example,
    Task,
    TaskSpec,
    gold_alignment,
    gold_sources,
    make_task,
    parse_pairs_text,
    read_aligned_files,
    read_pairs_tsv,
    task_from_spec,
)
from transformer.model import ConfigError

MULTI30K = SHARED_DATA / "multi30k"
TWO_PAIRS = "ich mochte ein bier\ti want a beer\nich mochte ein cola\ti want a coke\n"


def _write(path: Path, content: str | bytes) -> Path:
    data = content.encode("utf-8") if isinstance(content, str) else content
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def _tsv(tmp_path: Path, n: int) -> Path:
    return _write(tmp_path / "pairs.tsv", "".join(f"source {i}\ttarget {i}\n" for i in range(n)))


@pytest.mark.parametrize("name, source, target, alignment", [
    ("reverse", "abc", "cba", (2, 1, 0)),
    ("copy", "abc", "abc", (0, 1, 2)),
    ("sort", "cab", "abc", (1, 2, 0)),
    ("sort", "baba", "aabb", (1, 3, 0, 2)),  # duplicates: k-th occurrence in sorted order -> k-th in source
])
def test_gold_alignment_points_at_the_source_character(name, source, target, alignment):
    assert gold_alignment(name, source) == alignment
    assert "".join(source[i] for i in alignment) == target


def test_gold_alignment_is_none_for_translation_tasks():
    assert gold_alignment("toy-en-de", "a b") is None and gold_alignment("corpus", "a b") is None


@pytest.mark.parametrize("name", ["reverse", "copy", "sort"])
def test_generated_tasks_have_correct_targets_and_alignments(name):
    task = make_task(TaskSpec(name=name, n_train=300, n_valid=50, seed=3))
    expected = {"reverse": lambda s: s[::-1], "copy": lambda s: s, "sort": lambda s: "".join(sorted(s))}[name]
    assert (len(task.train), len(task.valid)) == (300, 50)
    for ex in task.train + task.valid:
        assert 10 <= len(ex.source) <= 19 and ex.source.isalpha() and ex.source.islower()
        assert ex.target == expected(ex.source)
        assert ex.alignment == gold_sources(name, ex.source)
        for j, gold in enumerate(ex.alignment):  # every acceptable source position holds the target character
            assert gold is not None and {ex.source[i] for i in accepted(gold)} == {ex.target[j]}
    assert task.has_alignment and task.level == "char"
    assert task.src_tokenizer.vocab_size == task.tgt_tokenizer.vocab_size == 30
    assert task.probe in {ex.source for ex in task.valid}


def test_sort_alignment_matches_duplicates_stably():
    task = make_task(TaskSpec(name="sort", n_train=200, n_valid=10, min_len=30, max_len=40))
    ex = next(ex for ex in task.train if len(set(ex.source)) < len(ex.source))
    stable = gold_alignment("sort", ex.source)
    for letter in set(ex.source):
        in_source = [i for i, c in enumerate(ex.source) if c == letter]
        assert [i for i in stable if ex.source[i] == letter] == in_source


def test_sort_scores_accept_every_copy_of_a_repeated_character():
    # "baba" -> "aabb": the output cannot tell which "a" was taken first, so either copy is gold for both
    assert gold_sources("sort", "baba") == ((1, 3), (1, 3), (0, 2), (0, 2))
    assert gold_sources("sort", "cab") == gold_alignment("sort", "cab") == (1, 2, 0)  # single characters: one
    assert gold_sources("sort", "bcab") == (2, (0, 3), (0, 3), 1)
    assert gold_sources("reverse", "abca") == gold_alignment("reverse", "abca") == (3, 2, 1, 0)  # order decides
    assert gold_sources("copy", "aa") == (0, 1) and gold_sources("toy-en-de", "a b") is None


def test_generated_tasks_are_deterministic_by_seed_and_valid_is_held_out():
    a, b = (make_task(TaskSpec(name="reverse", n_train=2000, seed=7)) for _ in range(2))
    assert a.train == b.train and a.valid == b.valid and a.probe == b.probe
    assert make_task(TaskSpec(name="reverse", n_train=2000, seed=8)).train != a.train
    valid_sources = [ex.source for ex in a.valid]
    assert len(set(valid_sources)) == len(valid_sources) == 500
    assert not set(valid_sources) & {ex.source for ex in a.train}


def test_reverse_default_size_is_the_case_studys():
    task = make_task(TaskSpec(name="reverse"))
    assert len(task.train) == 50_000


@pytest.mark.parametrize("kwargs, message", [
    ({"min_len": 0}, "min_len"),
    ({"min_len": 5, "max_len": 4}, "max_len"),
    ({"max_len": 201}, "max_len"),
    ({"min_len": 1, "max_len": 1, "n_valid": 20}, "distinct strings"),
    ({"n_train": 0}, "n_train"),
])
def test_generated_tasks_validate_lengths_and_sizes(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        make_task(TaskSpec(name="copy", **kwargs))


def test_unknown_task_name_is_refused():
    with pytest.raises(ConfigError, match="unknown task"):
        make_task(TaskSpec(name="translate-everything"))


def test_spec_rebuilds_the_same_task():
    task = make_task(TaskSpec(name="sort", n_train=100, n_valid=20, seed=5, min_len=3, max_len=6))
    again = task_from_spec(task.spec)
    assert again.train == task.train and again.valid == task.valid and again.spec == task.spec


def test_toy_en_de_task_is_word_level_with_alignments():
    task = make_task(TaskSpec(name="toy-en-de", n_train=200, n_valid=20, seed=1))
    assert task.level == "word" and (len(task.train), len(task.valid)) == (200, 20)
    assert task.has_alignment and task.spec["name"] == "toy-en-de"
    for ex in task.train[:50]:
        n_src = len(task.src_tokenizer.split(ex.source))
        assert len(ex.alignment) == len(task.tgt_tokenizer.split(ex.target))
        assert all(i is None or 0 <= i < n_src for i in ex.alignment)
        assert task.src_tokenizer.unk_id not in task.src_tokenizer.encode(ex.source)


def test_toy_en_de_builds_word_tokenizers_from_the_train_split(monkeypatch):
    def make_splits(n_train: int, n_valid: int, seed: int = 0):
        train = [Example("der hund", "the dog", (0, 1))] * n_train
        return train, [Example("die katze", "the cat", (0, 1))] * n_valid

    monkeypatch.setitem(sys.modules, "transformer.data.toy_en_de", types.SimpleNamespace(make_splits=make_splits))
    task = make_task(TaskSpec(name="toy-en-de", n_train=5, n_valid=2, seed=4))
    assert (len(task.train), len(task.valid), task.probe) == (5, 2, "die katze")
    assert task.src_tokenizer.tokens[4:] == ["der", "hund"] and task.has_alignment
    assert task.spec == {"name": "toy-en-de", "seed": 4, "n_train": 5, "n_valid": 2, "min_freq": 1}


def test_corpus_tsv_happy_path(tmp_path):
    path = _tsv(tmp_path, 100)
    task = make_task(TaskSpec(name="corpus", data=[path], seed=2, valid_fraction=0.1, tokenizer="word"))
    assert (len(task.train), len(task.valid)) == (90, 10) and task.level == "word"
    assert {ex.source for ex in task.train}.isdisjoint(ex.source for ex in task.valid)
    assert not task.has_alignment and task.spec["data"] == [str(path)] and not task.spec["valid_is_train"]
    assert make_task(TaskSpec(name="corpus", data=[path], seed=2, valid_fraction=0.1)).valid == task.valid
    assert make_task(TaskSpec(name="corpus", data=[path], seed=3, valid_fraction=0.1)).valid != task.valid
    assert len(make_task(TaskSpec(name="corpus", data=[path], valid_fraction=0.5, n_valid=7)).valid) == 7
    assert task.src_tokenizer.token_to_id("source") is not None
    assert task.tgt_tokenizer.token_to_id("source") is None  # separate vocabularies
    train_numbers = {ex.source.split()[1] for ex in task.train}
    unseen = next(ex.source for ex in task.valid if ex.source.split()[1] not in train_numbers)
    assert task.src_tokenizer.unk_id in task.src_tokenizer.encode(unseen)  # vocab from train split only


def test_corpus_reads_gzip_tsv_skips_blank_lines_and_caps_pairs(tmp_path):
    path = _write(tmp_path / "pairs.tsv.gz", "\ufeffa b\tc d\n\n  \ne f \t g h\r\ni j\tk l\n")
    assert read_pairs_tsv(path) == [("a b", "c d"), ("e f", "g h"), ("i j", "k l")]
    assert read_pairs_tsv(path, max_pairs=2) == [("a b", "c d"), ("e f", "g h")]


def test_two_pair_text_corpus_trains_and_validates_on_both():
    task = make_task(TaskSpec(name="corpus", text=TWO_PAIRS, tokenizer="word"))
    assert task.train == task.valid and len(task.train) == 2 and task.spec["valid_is_train"]
    assert task.train[1].target == "i want a coke" and task.spec["text"] == TWO_PAIRS
    assert task.src_tokenizer.tokens[4:] == ["ein", "ich", "mochte", "bier", "cola"]
    assert task.tgt_tokenizer.vocab_size == 4 + 5 and task.probe == "ich mochte ein bier"


def test_typed_text_accepts_alternative_separators():
    text = "ich mochte ein bier => i want a beer\n\nein cola -> a coke\nx ||| y\na => b\tc"
    assert parse_pairs_text(text) == [("ich mochte ein bier", "i want a beer"), ("ein cola", "a coke"),
                                      ("x", "y"), ("a => b", "c")]


@pytest.mark.parametrize("text, line", [
    ("a\tb\nonly one column\n", 2),
    ("a\tb\nc\td\te\n", 2),
    ("a\tb\n\n\t x\n", 3),
    ("a => b => c", 1),
])
def test_bad_typed_text_names_the_line(text, line):
    with pytest.raises(DataError, match=f"<text>, line {line}:"):
        parse_pairs_text(text)


@pytest.mark.parametrize("content, line, message", [
    ("a\tb\nsingle column\n", 2, "single column"),
    ("a\tb\nc\td\n\ne\tf\tg\n", 4, "exactly 2 columns .* found 3"),
    ("a\tb\n\tno source\n", 2, "source is empty"),
    (b"a\tb\nc\td\ncaf\xe9\tx\n", 3, "not valid UTF-8"),
])
def test_bad_tsv_file_error_names_file_and_line(tmp_path, content, line, message):
    path = _write(tmp_path / "bad.tsv", content)
    with pytest.raises(DataError, match=f"bad.tsv, line {line}: .*{message}"):
        make_task(TaskSpec(name="corpus", data=[path]))


def test_empty_and_missing_files_raise_data_error(tmp_path):
    with pytest.raises(DataError, match="empty.tsv: no sentence pairs"):
        make_task(TaskSpec(name="corpus", data=[_write(tmp_path / "empty.tsv", "\n \n")]))
    with pytest.raises(DataError, match="missing.tsv: cannot open"):
        make_task(TaskSpec(name="corpus", data=[tmp_path / "missing.tsv"]))
    with pytest.raises(DataError, match="<text>: no sentence pairs"):
        make_task(TaskSpec(name="corpus", text="  \n"))


def test_corrupt_gzip_raises_data_error(tmp_path):
    not_gzip = _write(tmp_path / "a.en.gz", b"")
    not_gzip.write_bytes(b"this is not gzip\n")
    truncated = tmp_path / "b.de.gz"
    whole = gzip.compress("".join(f"source {i}\ttarget {i * i}\n" for i in range(5000)).encode())
    truncated.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataError, match="a.en.gz, line 1: cannot read"):
        read_aligned_files(not_gzip, truncated)
    with pytest.raises(DataError, match="b.de.gz, line .*cannot read"):
        read_pairs_tsv(truncated)


def test_aligned_files_happy_path_and_blank_lines(tmp_path):
    src = _write(tmp_path / "train.en.gz", "a dog\n\nthe cat\n")
    tgt = _write(tmp_path / "train.de", "ein hund\n\ndie katze\n")
    assert read_aligned_files(src, tgt) == [("a dog", "ein hund"), ("the cat", "die katze")]
    assert read_aligned_files(src, tgt, max_pairs=1) == [("a dog", "ein hund")]


def test_aligned_files_with_different_line_counts_name_both(tmp_path):
    src = _write(tmp_path / "x.en", "a\nb\nc\n")
    tgt = _write(tmp_path / "x.de", "a\nb\n")
    with pytest.raises(DataError, match=r"x.en has 3 lines, .*x.de has 2 lines \(first unmatched line 3\)"):
        make_task(TaskSpec(name="corpus", data=[src, tgt]))
    with pytest.raises(DataError, match=r"x.de has 2 lines, .*x.en has 3 lines"):
        read_aligned_files(tgt, src)


def test_aligned_files_blank_on_one_side_and_bad_utf8_name_file_and_line(tmp_path):
    src = _write(tmp_path / "y.en", "a\nb\nc\n")
    with pytest.raises(DataError, match="y.de, line 2: the line is empty but line 2 of .*y.en is not"):
        read_aligned_files(src, _write(tmp_path / "y.de", "a\n \nc\n"))
    with pytest.raises(DataError, match="z.de, line 3: not valid UTF-8"):
        read_aligned_files(src, _write(tmp_path / "z.de", b"a\nb\n\xff\xfe\n"))


def test_corpus_argument_errors_are_config_errors(tmp_path):
    path = _tsv(tmp_path, 30)
    with pytest.raises(ConfigError, match="not both"):
        make_task(TaskSpec(name="corpus", data=[path], text=TWO_PAIRS))
    with pytest.raises(ConfigError, match="one TSV file or two"):
        make_task(TaskSpec(name="corpus", data=[path, path, path]))
    with pytest.raises(ConfigError, match="valid_fraction"):
        make_task(TaskSpec(name="corpus", data=[path], valid_fraction=1.5))
    with pytest.raises(ConfigError, match="max_pairs"):
        make_task(TaskSpec(name="corpus", data=[path], max_pairs=0))


@pytest.mark.skipif(not (MULTI30K / "train.en.gz").exists(), reason="Multi30k data not present")
def test_real_multi30k_files_with_max_pairs():
    files = [MULTI30K / "train.en.gz", MULTI30K / "train.de.gz"]
    task = make_task(TaskSpec(name="corpus", data=files, max_pairs=2000, min_freq=2, tokenizer="word"))
    assert len(task.train) + len(task.valid) == 2000 and len(task.valid) == 100
    assert task.train[0].source[0].isupper()  # text kept as written; the tokenizer lowercases
    assert task.src_tokenizer.token_to_id("a") is not None and task.tgt_tokenizer.token_to_id("ein") is not None
    assert task.src_tokenizer.token_to_id("A") is None
    assert isinstance(task_from_spec(task.spec), Task)


def test_every_task_name_is_known():
    assert TASK_NAMES == ("reverse", "copy", "sort", "induction", "recall", "toy-en-de", "corpus")


def test_encoded_training_pairs_are_packed_compactly_and_batch_as_lists_would():
    """A corpus's encoded training split is one int32 array (a tenth of the memory of lists of ints), cut to the
    model's length, and the sampler draws exactly the batches it drew from plain lists."""
    import tracemalloc

    from transformer.data import BucketSampler, PackedIds

    task = make_task(TaskSpec(name="toy-en-de", n_train=3000, n_valid=10))
    texts = [e.source for e in task.train]
    lists = [ids[:7] for ids in task.src_tokenizer.encode_many(texts)]
    packed = PackedIds.encode(task.src_tokenizer.encode_many, iter(texts), limit=7, chunk=1000)
    assert len(packed) == len(lists) and [packed[i] for i in range(len(lists))] == lists
    assert packed[-1] == lists[-1] and max(len(packed[i]) for i in range(len(packed))) == 7
    with pytest.raises(IndexError):
        packed[len(lists)]
    tracemalloc.start()
    as_lists = [[i + 300 for i in ids] for ids in lists]  # ids above 256, as a real vocabulary's are
    list_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert packed.nbytes * 5 < list_bytes, (packed.nbytes, list_bytes)
    del as_lists
    tgt = PackedIds.encode(task.tgt_tokenizer.encode_many, (e.target for e in task.train), limit=9)
    tgt_lists = [ids[:9] for ids in task.tgt_tokenizer.encode_many([e.target for e in task.train])]
    from_lists = iter(BucketSampler(lists, tgt_lists, 32, seed=3))
    from_packed = iter(BucketSampler(packed, tgt, 32, seed=3))
    for _ in range(120):  # over an epoch boundary
        a, b = next(from_lists), next(from_packed)
        assert torch.equal(a.src, b.src) and torch.equal(a.tgt_out, b.tgt_out)


def test_a_task_spec_stores_data_beside_the_repository_relative_to_it_and_finds_it_again(tmp_path):
    beside = SHARED_DATA / "multi30k" / "train.en.gz"
    stored = TaskSpec(name="corpus", data=[beside, tmp_path / "b.txt"], tokenizer="word").to_dict(valid_is_train=True)
    assert stored["data"] == ["../shared/data/multi30k/train.en.gz", os.path.abspath(tmp_path / "b.txt")]
    assert stored["valid_is_train"] is True and "n_train" not in stored  # corpus fields only, plus what was derived
    again = TaskSpec.from_dict(stored)
    assert [Path(p).resolve() for p in again.data] == [beside.resolve(), tmp_path.resolve() / "b.txt"]
    assert again.to_dict(valid_is_train=True) == stored


def test_a_task_spec_is_built_by_keyword_and_refuses_unknown_stored_fields():
    with pytest.raises(TypeError):
        TaskSpec("reverse")  # the spec has 15 fields: each is named
    with pytest.raises(ConfigError, match="unknown task spec field"):
        TaskSpec.from_dict({"name": "reverse", "n_trian": 5})
    with pytest.raises(TypeError, match="TaskSpec"):
        make_task("reverse")
