"""Subword tokenizers (BPE, Unigram): trained on the training split, cased, lossless decoding, saved in checkpoints."""
import gzip
import unicodedata
from pathlib import Path

import pytest

from tests.helpers import SHARED_DATA
from transformer.data import TaskSpec, Tokenizer, TokenizerError, make_task, task_from_spec
from transformer.data.subword import train_subword_tokenizer
from transformer.model import ConfigError, ModelConfig, default_configs
from transformer.store import load_checkpoint, save_checkpoint, task_for_checkpoint
from transformer.train import Trainer, checkpoint_from_trainer

MULTI30K = next((p for p in (SHARED_DATA / "multi30k",
                              Path("/work/shared/data/multi30k")) if p.is_dir()), Path("/nonexistent"))
PAIRS = [("A man walks his dog.", "Ein Mann führt seinen Hund aus."),
         ("Two children play in the park.", "Zwei Kinder spielen im Park."),
         ("A woman, smiling, reads a book!", "Eine Frau liest lächelnd ein Buch!"),
         ("The dog runs on the beach.", "Der Hund rennt am Strand.")] * 30
TEXT = "\n".join(f"{s}\t{t}" for s, t in PAIRS)


@pytest.mark.parametrize("kind", ["bpe", "unigram"])
def test_subword_decoding_gives_back_the_cased_text_with_its_spacing(kind):
    tok = train_subword_tokenizer([s for pair in PAIRS for s in pair], kind, 100)
    for text in ("A woman, smiling, reads a book!", "Zwei Kinder spielen im Park."):
        assert tok.decode(tok.encode(text)) == text
    assert "".join(tok.split("A man")) == "▁A▁man"  # cased pieces, word starts marked


def test_specials_are_ids_0_to_3_and_text_looking_like_a_special_is_not_one():
    tok = train_subword_tokenizer([s for pair in PAIRS for s in pair], "bpe", 100)
    assert tok.tokens[:4] == ["<pad>", "<s>", "</s>", "<unk>"]
    assert 1 not in tok.encode("<s> A man")


def test_unknown_characters_are_reported_with_their_own_text():
    tok = train_subword_tokenizer([s for pair in PAIRS for s in pair], "bpe", 100)
    pieces, ids = tok.split("A man ☃"), tok.encode("A man ☃")
    assert [p for p, i in zip(pieces, ids, strict=True) if i == tok.unk_id] == ["☃"]


@pytest.mark.parametrize("size", [0, 10, 10**9, True, "8k"])
def test_an_absurd_vocabulary_size_is_refused_naming_the_option(size):
    with pytest.raises(TokenizerError, match="vocab_size"):
        make_task(TaskSpec(name="corpus", text=TEXT, vocab_size=size))


def test_a_joint_vocabulary_is_one_tokenizer_and_separate_ones_differ():
    joint = make_task(TaskSpec(name="corpus", text=TEXT, vocab_size=120))
    assert joint.src_tokenizer is joint.tgt_tokenizer
    separate = make_task(TaskSpec(name="corpus", text=TEXT, vocab_size=120, joint=False))
    assert separate.src_tokenizer.tokens != separate.tgt_tokenizer.tokens
    assert "▁Hund" not in separate.src_tokenizer.tokens and "▁Hund" in separate.tgt_tokenizer.tokens


def test_tied_embeddings_share_one_matrix_and_need_a_joint_vocabulary(tmp_path):
    task = make_task(TaskSpec(name="corpus", text=TEXT, vocab_size=120))
    model_cfg, train_cfg = default_configs("corpus", 120, 120, "tiny", {"tie_embeddings": True, "max_len": 32},
                                           {"max_steps": 3, "eval_examples": 4})
    trainer = Trainer(task, model_cfg, train_cfg)
    trainer.run()
    m = trainer.model
    assert m.generator.weight is m.src_embed.weight and m.tgt_embed.weight is m.src_embed.weight
    path = save_checkpoint(checkpoint_from_trainer(trainer), tmp_path / "tied", half=True)
    ckpt = load_checkpoint(path)
    assert ckpt.model.generator.weight is ckpt.model.src_embed.weight
    assert ckpt.model.src_embed.weight.dtype.is_floating_point and ckpt.model.src_embed.weight.dtype.itemsize == 4
    with pytest.raises(ConfigError, match="joint vocabulary"):
        ModelConfig(src_vocab_size=100, tgt_vocab_size=120, tie_embeddings=True)


def test_a_subword_checkpoint_round_trips_and_its_task_reuses_the_saved_tokenizers(tmp_path):
    task = make_task(TaskSpec(name="corpus", text=TEXT, tokenizer="unigram", vocab_size=90))
    model_cfg, train_cfg = default_configs("corpus", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           "tiny", {"max_len": 32}, {"max_steps": 2, "eval_examples": 4})
    trainer = Trainer(task, model_cfg, train_cfg)
    trainer.run()
    ckpt = load_checkpoint(save_checkpoint(checkpoint_from_trainer(trainer), tmp_path / "u"))
    assert ckpt.src_tokenizer.kind == "unigram"
    assert ckpt.src_tokenizer.encode("A man walks.") == task.src_tokenizer.encode("A man walks.")
    assert task_for_checkpoint(ckpt).src_tokenizer is ckpt.src_tokenizer


def test_an_old_corpus_spec_without_a_tokenizer_key_is_rebuilt_word_level():
    spec = make_task(TaskSpec(name="corpus", text=TEXT, tokenizer="word")).spec
    old = {k: v for k, v in spec.items() if k not in ("tokenizer", "vocab_size", "joint", "valid_data")}
    assert task_from_spec(old).src_tokenizer.kind == "word"


def test_a_tokenizer_json_with_the_wrong_model_type_is_refused():
    bpe = train_subword_tokenizer(["a b c", "a b"], "bpe", 64)
    with pytest.raises(TokenizerError, match="Unigram model"):
        Tokenizer.from_json(bpe.to_json().replace('"kind": "bpe"', '"kind": "unigram"', 1))


@pytest.mark.skipif(not MULTI30K.is_dir(), reason="the Multi30k corpus is not at ../shared/data/multi30k")
def test_multi30k_validation_lines_decode_back_exactly_with_a_bpe_trained_on_a_training_slice():
    task = make_task(TaskSpec(name="corpus", data=[MULTI30K / "train.en.gz", MULTI30K / "train.de.gz"], max_pairs=2000,
                     valid_data=[MULTI30K / "val.en.gz", MULTI30K / "val.de.gz"], n_valid=200, vocab_size=2000))
    with gzip.open(MULTI30K / "val.de.gz", "rt", encoding="utf-8") as fh:
        first = fh.readline().strip()
    assert task.valid[0].target == first  # the validation split is the val files, not a slice of train
    tok = task.tgt_tokenizer
    known = [e.target for e in task.valid if tok.unk_id not in tok.encode(e.target)]
    assert len(known) > 150 and all(tok.decode(tok.encode(t)) == unicodedata.normalize("NFKC", t) for t in known)


@pytest.mark.parametrize("flags, message", [(["--vocab-size", "0"], "vocab_size must be an integer between"),
                                            (["--vocab-size", "1000000000"], "vocab_size must be an integer"),
                                            (["--tokenizer", "bpe", "--task", "reverse"], "are for --task corpus")])
def test_cli_refuses_bad_tokenizer_options_in_one_line_and_writes_nothing(tmp_path, capsys, flags, message):
    from transformer.cli import main

    data = tmp_path / "pairs.tsv"
    data.write_text(TEXT, encoding="utf-8")
    args = ["train", "--out", str(tmp_path / "out"), "--steps", "1", *flags]
    if "--task" not in flags:
        args += ["--task", "corpus", "--data", str(data)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
