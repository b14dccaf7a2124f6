"""A tiny random reverse model (2+2 layers, 4 heads) for tests of what is computed from a model's weights."""
from __future__ import annotations

import torch

from transformer.data import TaskSpec, Tokenizer, make_task
from transformer.model import Seq2SeqTransformer, default_configs


def tiny_reverse_model(seed: int) -> tuple[Seq2SeqTransformer, Tokenizer, Tokenizer]:
    """(model in eval mode, source tokenizer, target tokenizer); weights drawn from `seed`."""
    task = make_task(TaskSpec(name="reverse", n_train=50, n_valid=10, min_len=4, max_len=8))
    cfg, _ = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                             model_overrides=dict(d_model=32, d_ff=64, n_heads=4, n_encoder_layers=2,
                                                  n_decoder_layers=2, max_len=64))
    torch.manual_seed(seed)
    return Seq2SeqTransformer(cfg).eval(), task.src_tokenizer, task.tgt_tokenizer
