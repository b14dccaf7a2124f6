"""Our own models of the three architectures and both norm placements, small and with LayerNorms moved away from 1/0
(so a norm left out or used twice shows), and the inputs the per-family insides tests feed every model."""
from __future__ import annotations

import torch

from transformer.adapters import InspectableModel, adapter_for
from transformer.data import TaskSpec, make_task
from transformer.model import build_model, default_configs

TEXT = "a man in a blue shirt sees the dog"
OURS = ("ours-pre", "ours-post", "ours-decoder-only-pre", "ours-decoder-only-post", "ours-encoder-only-pre",
        "ours-encoder-only-post")


def _ours(name: str) -> InspectableModel:
    task = make_task(TaskSpec(name="reverse", n_train=20, n_valid=5, min_len=4, max_len=8))
    architecture = next((a for a in ("decoder-only", "encoder-only") if a in name), "encoder-decoder")
    cfg, _ = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                             model_overrides=dict(d_model=32, d_ff=64, n_heads=4, n_encoder_layers=2,
                                                  n_decoder_layers=3, max_len=64, architecture=architecture,
                                                  norm=name.rsplit("-", 1)[1]))
    torch.manual_seed(0)
    model = build_model(cfg).eval()
    with torch.no_grad():  # LayerNorms away from 1/0, so a norm left out or used twice shows
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
    return adapter_for(model, task.src_tokenizer, task.tgt_tokenizer, name=name)


def _inputs(adapter: InspectableModel, text: str = TEXT) -> tuple[torch.Tensor, torch.Tensor]:
    """Source ids (1, S) and decoder inputs (1, T): the start and a few target pieces, or the prompt and more."""
    ours = "abcdefg" if adapter.family.decodes else "abc<mask>efg </s> gfedcba"  # our masked LM: a pair with a mask
    source = adapter.tokenize_source(text if adapter.source == "huggingface" else ours)
    more = adapter.target_ids("the dog sees" if adapter.source == "huggingface" else "gfed")[:4]
    return torch.tensor([source.ids]), torch.tensor([[*adapter.decoder_prefix(source), *more]])
