"""Tiny randomly initialised Hugging Face causal language models (GPT-2, Llama with grouped-query attention,
Qwen2 with biased projections) with byte-level BPE tokenizers trained here on a few hundred Multi30k lines (or
generated text when the corpus is absent), saved with `save_pretrained`: no download."""
from __future__ import annotations

import gzip
from pathlib import Path

import torch

from tests.helpers import SHARED_DATA
from tests.helpers.hf_tiny_models import corpus

CAUSAL = ("gpt2", "llama", "qwen2")
MULTI30K = SHARED_DATA / "multi30k" / "train.en.gz"
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SIZE = dict(d_model=32, layers=2, heads=4, kv_heads=2, ffn=64, positions=1100)


def lines(n: int = 300) -> list[str]:
    """A few hundred English lines of Multi30k, or generated sentences when the corpus is not here."""
    for path in (MULTI30K, Path("/work/shared/data/multi30k/train.en.gz")):
        if path.is_file():
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return [next(f).strip() for _ in range(n)]
    return corpus(n)


def tokenizer(family: str, text: list[str]):
    """A byte-level BPE tokenizer (GPT-2 style); Llama's adds <s> in front, Llama's and Qwen2's chat."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast
    specials = {"gpt2": ["<|endoftext|>"], "llama": ["<s>", "</s>", "<|im_start|>", "<|im_end|>"],
                "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]}[family]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if family == "llama":
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
        out = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")
    elif family == "qwen2":
        out = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    else:
        out = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    if family != "gpt2":
        out.chat_template = CHAT_TEMPLATE
    return out


def model(family: str, vocab: int, s: dict[str, int], tok):
    """A random model of `family` with `vocab` rows and sizes `s`."""
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
    if family == "gpt2":
        return GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=s["d_model"], n_layer=s["layers"],
                                          n_head=s["heads"], n_inner=s["ffn"], n_positions=s["positions"],
                                          bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id))
    common = dict(vocab_size=vocab, hidden_size=s["d_model"], num_hidden_layers=s["layers"],
                  num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"], intermediate_size=s["ffn"],
                  max_position_embeddings=s["positions"], tie_word_embeddings=False)
    if family == "llama":
        return LlamaForCausalLM(LlamaConfig(**common, bos_token_id=tok.bos_token_id,
                                            eos_token_id=[tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")]))
    return Qwen2ForCausalLM(Qwen2Config(**common, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id))


def build(family: str, folder: Path, seed: int = 0, size: dict[str, int] | None = None) -> Path:
    """Save a random `family` model and its trained tokenizer into `folder` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(family, lines())
    torch.manual_seed(seed)
    network = model(family, len(tok), size or SIZE, tok)
    with torch.no_grad():  # a random model stops at once if an end token wins: make its end logits lose
        eos_ids = network.generation_config.eos_token_id
        for eos in eos_ids if isinstance(eos_ids, list) else [eos_ids]:
            network.lm_head.weight[eos] = 0.0
    network.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


# -- more decoder-only families: Mistral, GPT-NeoX (Pythia), Phi-3, OLMo 2, Falcon, Gemma 3, Gemma 2, gpt-oss ---------
NEW_CAUSAL = ("mistral", "gpt_neox", "phi3", "olmo2", "falcon", "gemma3_text", "gemma2", "gpt_oss")
WINDOW = 16  # the sliding window of the families that have one, shorter than the long inputs


def new_model(family: str, vocab: int, tok, window: int | None = None, **extra):
    """A random 2-layer model of one of `NEW_CAUSAL` (hidden 32, 4 heads of 8, 2 key/value heads where the family
    groups them); `window` a sliding window (Mistral; Gemma's first layer is local); `extra` config overrides."""
    import transformers as hf
    ends = dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.eos_token_id)
    common = dict(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, max_position_embeddings=1100, tie_word_embeddings=False, **ends)
    gqa = dict(common, num_key_value_heads=2)
    gemma = dict(gqa, head_dim=8, query_pre_attn_scalar=8, sliding_window=window or 512,
                 layer_types=["sliding_attention", "full_attention"])
    configs = {
        "mistral": lambda: hf.MistralConfig(**gqa, sliding_window=window),
        "gpt_neox": lambda: hf.GPTNeoXConfig(**common, rotary_pct=0.5, use_parallel_residual=True),
        "phi3": lambda: hf.Phi3Config(**gqa, sliding_window=window, partial_rotary_factor=1.0),
        "olmo2": lambda: hf.Olmo2Config(**gqa),
        "falcon": lambda: hf.FalconConfig(**{k: v for k, v in common.items() if k not in (
            "intermediate_size", "max_position_embeddings")}, new_decoder_architecture=True, num_kv_heads=2,
            ffn_hidden_size=64, max_position_embeddings=1100),
        "gemma3_text": lambda: hf.Gemma3TextConfig(**gemma),
        # large weights and a low cap, so that the soft-cap changes the weights visibly
        "gemma2": lambda: hf.Gemma2Config(**gemma, attn_logit_softcapping=5.0, initializer_range=0.5),
        "gpt_oss": lambda: hf.GptOssConfig(**dict(gqa, head_dim=8, sliding_window=window or 512, num_local_experts=4,
                                                  num_experts_per_tok=2,
                                                  layer_types=["sliding_attention", "full_attention"])),
    }
    config = configs[family]()
    for key, value in extra.items():
        setattr(config, key, value)
    return hf.AutoModelForCausalLM.from_config(config)


def build_new(family: str, folder: Path, seed: int = 0, window: int | None = None, **extra) -> Path:
    """Save a random `NEW_CAUSAL` model and a trained tokenizer (Llama's: <s> in front) into `folder` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    tok = tokenizer("llama", lines())
    torch.manual_seed(seed)
    network = new_model(family, len(tok), tok, window, **extra)
    with torch.no_grad():  # a random model stops at once if its end token wins: make its end logit lose
        network.get_output_embeddings().weight[tok.eos_token_id] = 0.0
    network.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
