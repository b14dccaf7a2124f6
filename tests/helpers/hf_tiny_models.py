"""Tiny randomly initialised Hugging Face encoder-decoders (Marian, BART, T5) with real tokenizers trained here
on generated text, saved with `save_pretrained`: no download, no corpus needed."""
from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import torch

FAMILIES = ("marian", "bart", "t5")
MORE_FAMILIES = ("mbart", "mt5")  # built where every family must be covered (the insides), not in every test
WORDS = ("the a dog cat runs sleeps red blue house tree man woman sees big small green walks under over "
         "near bird fish eats").split()
SIZE = dict(d_model=16, layers=2, heads=2, ffn=32, positions=64)
# facebook/bart-large's 12 + 12 layers x 16 heads (what the grid draws), narrow (d_model 1024 would only add weight)
BART_LARGE_HEADS = dict(d_model=64, layers=12, heads=16, ffn=128, positions=1024)
OPUS_MT_SHAPE = dict(d_model=512, layers=6, heads=8, ffn=2048, positions=512)  # Helsinki-NLP/opus-mt-en-de


def corpus(n: int = 300, seed: int = 0) -> list[str]:
    """Generated sentences (a few hundred lines of a small vocabulary)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def _marian_tokenizer(folder: Path, lines: list[str]):
    import sentencepiece as spm
    from transformers import MarianTokenizer
    text = folder / "corpus.txt"
    text.write_text("\n".join(lines))
    for side in ("source", "target"):
        spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / side), vocab_size=40,
                                       hard_vocab_limit=False, model_type="unigram", bos_id=-1, eos_id=1, unk_id=2,
                                       pad_id=-1, minloglevel=2)
        (folder / f"{side}.model").rename(folder / f"{side}.spm")
        (folder / f"{side}.vocab").unlink()
    text.unlink()
    sp = spm.SentencePieceProcessor(model_file=str(folder / "source.spm"))
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MarianTokenizer(source_spm=str(folder / "source.spm"), target_spm=str(folder / "target.spm"),
                               vocab=str(folder / "vocab.json"))


def _fast_tokenizer(family: str, lines: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast
    if family in ("bart", "mbart"):
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=120,
                                                           special_tokens=["<s>", "<pad>", "</s>", "<unk>"]))
        tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>",
                                                           special_tokens=[("<s>", 0), ("</s>", 2)])
        return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                       unk_token="<unk>")
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(lines, trainers.UnigramTrainer(vocab_size=60, special_tokens=["<pad>", "</s>", "<unk>"],
                                                           unk_token="<unk>"))
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>", unk_token="<unk>")


def _model(family: str, vocab: int, s: dict[str, int] = SIZE):
    from transformers import (
        BartConfig,
        BartForConditionalGeneration,
        MarianConfig,
        MarianMTModel,
        MBartConfig,
        MBartForConditionalGeneration,
        MT5Config,
        MT5ForConditionalGeneration,
        T5Config,
        T5ForConditionalGeneration,
    )
    if family in ("t5", "mt5"):
        config, model = (T5Config, T5ForConditionalGeneration) if family == "t5" else (MT5Config,
                                                                                      MT5ForConditionalGeneration)
        cfg = config(vocab_size=vocab, d_model=s["d_model"], d_kv=s["d_model"] // s["heads"], d_ff=s["ffn"],
                       num_layers=s["layers"], num_decoder_layers=s["layers"], num_heads=s["heads"],
                       decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
        return model(cfg)
    common = dict(vocab_size=vocab, d_model=s["d_model"], encoder_layers=s["layers"], decoder_layers=s["layers"],
                  encoder_attention_heads=s["heads"], decoder_attention_heads=s["heads"], encoder_ffn_dim=s["ffn"],
                  decoder_ffn_dim=s["ffn"], max_position_embeddings=s["positions"])
    if family == "marian":
        model = MarianMTModel(MarianConfig(**common, pad_token_id=vocab - 1, eos_token_id=1,
                                           decoder_start_token_id=vocab - 1, forced_eos_token_id=1))
        model.generation_config.bad_words_ids = [[vocab - 1]]  # as opus-mt: <pad> is never an output
        return model
    if family == "mbart":  # pre-norm, with final layer norms
        return MBartForConditionalGeneration(MBartConfig(**common, decoder_start_token_id=2))
    model = BartForConditionalGeneration(BartConfig(**common))
    model.generation_config.forced_bos_token_id = 0  # as mBART's target language: a forced first token
    return model


def build(family: str, folder: Path, seed: int = 0, size: dict[str, int] | None = None) -> Path:
    """Save a random `family` model (tiny, or of `size`, e.g. OPUS_MT_SHAPE) and its trained tokenizer into
    `folder` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = corpus()
    tokenizer = _marian_tokenizer(folder, lines) if family == "marian" else _fast_tokenizer(family, lines)
    torch.manual_seed(seed)
    model = _model(family, len(tokenizer), size or SIZE)
    with torch.no_grad():  # a random model stops at once if the end token wins: make its end logit lose
        eos = model.config.eos_token_id
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias[0, eos] = -10.0
        else:
            model.lm_head.weight[eos] = 0.0  # logit 0 among random ones
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
