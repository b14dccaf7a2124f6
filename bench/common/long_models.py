"""The long-input benchmarks' models and documents: T (a 2-layer, 4-head, d_model-64 Qwen2-style toy reading 131,072
positions) and Q (the Qwen2-0.5B layout with 4 of its 24 layers), random weights saved to a folder, and a document of
Multi30k lines cut to a token count."""
from __future__ import annotations

import os
from pathlib import Path

import torch


def load_average() -> str:
    """The machine's load averages (1, 5, 15 min), for a figure's note."""
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def build_model(kind: str, folder: Path) -> Path:
    """Save T or Q (random weights, the test tokenizer: a byte-level BPE of 300 ids) into `folder`."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from tests.helpers.hf_causal_models import lines, tokenizer
    folder.mkdir(parents=True, exist_ok=True)
    tok = tokenizer("qwen2", lines())
    torch.manual_seed(0)
    if kind == "T":
        config = Qwen2Config(vocab_size=500, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=131072,
                             tie_word_embeddings=False, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    else:  # Qwen2-0.5B's config, 4 of its 24 layers
        config = Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=4,
                             num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=131072,
                             rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
                             eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    network = Qwen2ForCausalLM(config)
    with torch.no_grad():  # a random model stops at once if an end token wins: make its end logits lose
        network.lm_head.weight[tok.eos_token_id] = 0.0
    network.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def document(folder: Path, tokens: int, skip: int = 0) -> str:
    """Multi30k lines joined by line breaks, as many as make at most `tokens` prompt tokens for this tokenizer; the
    first `skip` lines left out (300: held back, none of the lines the test tokenizer was trained on)."""
    from transformers import AutoTokenizer

    from tests.helpers.hf_causal_models import lines
    tok = AutoTokenizer.from_pretrained(folder)
    pool = lines(min(29000, tokens // 5 + 100 + skip))[skip:]
    low, high = 1, len(pool)
    while low < high:
        mid = (low + high + 1) // 2
        fits = len(tok("\n".join(pool[:mid]), verbose=False).input_ids) <= tokens
        low, high = (mid, high) if fits else (low, mid - 1)
    return "\n".join(pool[:low])


# -- the CLI in a fresh process --------------------------------------------------------------------------------------
