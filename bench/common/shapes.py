"""Random Hugging Face models of real shapes, built from their configs (nothing is downloaded), shared by the
benchmarks: adapters of opus-mt's, bart-large's and GPT-2 small's shapes, and the models folder the app benchmarks
and screenshots serve (`save_model`), with the 20-word caption and a long input."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from transformer.adapters import HFSeq2Seq, adapter_for

CAPTION = ("Two young children in blue shirts are playing soccer on a green field near the old church while their "
           "parents watch.")
CAPTIONS = [CAPTION.replace("Two", a).replace("blue", b) for a in ("Two", "Three", "Four", "Five")
            for b in ("blue", "red", "white", "black", "yellow", "orange")]
BART, OPUS, GPT2 = "bart-large-shape", "opus-mt-en-de-shape", "gpt2-small-shape"
LONG_TOKENS = 500


def opus_size_marian(folder: Path) -> HFSeq2Seq:
    """A random Marian of opus-mt size with the tiny test tokenizer (ids past it show as <id N>)."""
    from transformers import MarianConfig, MarianMTModel

    from tests.helpers.hf_tiny_models import build
    adapter = HFSeq2Seq.load(str(build("marian", folder)))
    vocab = 58101
    torch.manual_seed(0)
    # opus-mt-en-de's shape; MarianConfig's own defaults are twice as deep and wide (12+12 layers, d_model 1024)
    model = MarianMTModel(MarianConfig(vocab_size=vocab, pad_token_id=vocab - 1, decoder_start_token_id=vocab - 1,
                                       eos_token_id=1, forced_eos_token_id=1, max_position_embeddings=512,
                                       d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                                       decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                                       attn_implementation="eager")).eval()
    model.generation_config.bad_words_ids = [[vocab - 1]]
    return adapter_for(model, adapter.tokenizer, name="random Marian, opus-mt size")


def bart_large_shape(folder: Path) -> HFSeq2Seq:
    """A random BART of bart-large's shape with the tiny test tokenizer."""
    from transformers import BartConfig, BartForConditionalGeneration

    from tests.helpers.hf_tiny_models import build
    tiny = HFSeq2Seq.load(str(build("bart", folder)))
    torch.manual_seed(0)
    model = BartForConditionalGeneration(BartConfig(
        vocab_size=50265, d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
        decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_position_embeddings=1024,
        attn_implementation="eager")).eval()
    return adapter_for(model, tiny.tokenizer, name="random BART, bart-large shape")


def gpt2_small() -> Any:
    """GPT2LMHeadModel with gpt2's configuration (vocabulary 50,257, 1,024 positions), random weights."""
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                                      bos_token_id=0, eos_token_id=0, attn_implementation="eager"))


def bpe_tokenizer(family: str) -> Any:
    """A byte-level BPE of 8,000 pieces trained on Multi30k's English lines, with BART's or GPT-2's specials."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    from tests.helpers.hf_causal_models import lines
    specials = ["<s>", "<pad>", "</s>", "<unk>"] if family == "bart" else ["<|endoftext|>"]  # ids as in the configs
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(lines(29_000), trainers.BpeTrainer(
        vocab_size=8000, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    if family == "gpt2":
        return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=specials[0], eos_token=specials[0])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")


def save_model(name: str, folder: Path) -> None:
    """Save the random model `name` and its tokenizer into `folder`."""
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    if name == OPUS:  # saved over the tiny Marian (and beside its tokenizer) it starts from
        opus_size_marian(folder).model.save_pretrained(folder)
        return
    if name == GPT2:
        model, tokenizer = gpt2_small(), bpe_tokenizer("gpt2")
        model.generation_config.max_new_tokens = 20
        with torch.no_grad():
            model.transformer.wte.weight[model.config.eos_token_id] = 0.0  # tied: the end token's logit is 0
    else:
        model, tokenizer = BartForConditionalGeneration(BartConfig(
            vocab_size=50265, d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
            decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_position_embeddings=1024,
            attn_implementation="eager")), bpe_tokenizer("bart")
        with torch.no_grad():
            model.final_logits_bias[0, model.config.eos_token_id] = -10.0
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def long_text(folder: Path, seed: int, tokens: int = LONG_TOKENS) -> str:
    """Generated sentences cut to the most words whose source is at most `tokens` tokens for this tokenizer."""
    from transformers import AutoTokenizer

    from tests.helpers.hf_tiny_models import corpus
    tok = AutoTokenizer.from_pretrained(folder)
    words = " ".join(corpus(400, seed)).split()
    low, high = 1, min(len(words), tokens)
    while low < high:
        mid = (low + high + 1) // 2
        fits = len(tok(" ".join(words[:mid]), verbose=False).input_ids) <= tokens
        low, high = (mid, high) if fits else (low, mid - 1)
    return " ".join(words[:low])
