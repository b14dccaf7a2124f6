"""Tiny randomly initialised Hugging Face masked language models (BERT, RoBERTa, DistilBERT, ModernBERT with
sliding-window layers) with tokenizers trained here (WordPiece for BERT and DistilBERT, byte-level BPE for RoBERTa
and ModernBERT), saved with `save_pretrained`: no download."""
from __future__ import annotations

from pathlib import Path

import torch

from tests.helpers.hf_causal_models import lines

MASKED = ("bert", "roberta", "distilbert", "modernbert")
SIZE = {"d_model": 32, "layers": 3, "heads": 4, "ffn": 64, "positions": 600}
BERT_BASE = {"d_model": 768, "layers": 12, "heads": 12, "ffn": 3072, "positions": 512}  # bert-base-uncased's shape
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def tokenizer(family: str, text: list[str], vocab: int = 400):
    """The family's kind of tokenizer, trained on `text`; it joins a pair as the family's own does."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast
    if family == "roberta":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=vocab, special_tokens=ROBERTA_SPECIALS,
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
        return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                       cls_token="<s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>",
                                       model_input_names=["input_ids", "attention_mask"])
    if family == "modernbert":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=vocab, special_tokens=BERT_SPECIALS,
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    else:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        tok.train_from_iterator(text, trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=BERT_SPECIALS))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    names = ["input_ids", "token_type_ids", "attention_mask"] if family == "bert" else ["input_ids", "attention_mask"]
    return PreTrainedTokenizerFast(tokenizer_object=tok, cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                                   unk_token="[UNK]", mask_token="[MASK]", model_input_names=names)


def model(family: str, vocab: int, s: dict[str, int], tok):
    """A random masked LM of `family` with `vocab` rows and sizes `s`."""
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        DistilBertConfig,
        DistilBertForMaskedLM,
        ModernBertConfig,
        ModernBertForMaskedLM,
        RobertaConfig,
        RobertaForMaskedLM,
    )
    common = {"vocab_size": vocab, "hidden_size": s["d_model"], "num_hidden_layers": s["layers"],
                  "num_attention_heads": s["heads"], "intermediate_size": s["ffn"], "pad_token_id": tok.pad_token_id}
    if family == "bert":
        return BertForMaskedLM(BertConfig(**common, max_position_embeddings=s["positions"], type_vocab_size=2))
    if family == "roberta":
        return RobertaForMaskedLM(RobertaConfig(**common, max_position_embeddings=s["positions"] + 2,
                                                type_vocab_size=1, bos_token_id=0, eos_token_id=2))
    if family == "distilbert":
        return DistilBertForMaskedLM(DistilBertConfig(vocab_size=vocab, dim=s["d_model"], n_layers=s["layers"],
                                                      n_heads=s["heads"], hidden_dim=s["ffn"],
                                                      max_position_embeddings=s["positions"],
                                                      pad_token_id=tok.pad_token_id))
    return ModernBertForMaskedLM(ModernBertConfig(
        **common, max_position_embeddings=s["positions"], local_attention=4, global_attn_every_n_layers=2,
        cls_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id, bos_token_id=tok.cls_token_id,
        eos_token_id=tok.sep_token_id))


def build(family: str, folder: Path, seed: int = 0, size: dict[str, int] | None = None) -> Path:
    """Save a random `family` masked LM and its trained tokenizer into `folder` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(family, lines())
    torch.manual_seed(seed)
    network = model(family, len(tok), size or SIZE, tok)
    with torch.no_grad():  # norms away from 1/0, so a norm left out or used twice shows in the output head
        for module in network.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                if module.bias is not None:
                    module.bias.uniform_(-0.5, 0.5)
    network.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
