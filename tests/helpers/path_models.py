"""Every family the residual parts cover, tiny and with weights at a trained model's scale: norms away from 1/0 and
projections of std 1/sqrt(fan_in), so a norm left out, a bias dropped or a part counted twice shows in the sums."""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from tests.helpers.hf_causal_models import CAUSAL
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_masked_models import MASKED
from tests.helpers.hf_masked_models import build as build_masked
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.our_models import OURS, _ours
from transformer.adapters import InspectableModel, adapter_for
from transformer.store import open_model

PATH_FAMILIES = (*OURS, "marian", "bart", "mbart", "t5", *CAUSAL, "qwen3", *MASKED)


def path_model(family: str, folder: Path) -> InspectableModel:
    """`family`'s tiny model (ours or Hugging Face, built in `folder`) with its weights rescaled as above."""
    if family in OURS:
        return _ours(family)
    if family == "qwen3":  # per-head query and key norms; Qwen2's tiny tokenizer
        return _rescaled(_qwen3(folder))
    build = build_causal if family in CAUSAL else build_masked if family in MASKED else build_seq2seq
    return _rescaled(open_model(str(build(family, folder / family))))


def _qwen3(folder: Path) -> InspectableModel:
    from transformers import Qwen3Config, Qwen3ForCausalLM
    tiny = open_model(str(build_causal("qwen2", folder / "qwen2")))
    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=tiny.network.config.vocab_size, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, intermediate_size=64,
                         max_position_embeddings=256, tie_word_embeddings=False, attn_implementation="eager")
    return adapter_for(Qwen3ForCausalLM(config).eval(), tiny.tokenizer, name="qwen3")


def _rescaled(adapter: InspectableModel) -> InspectableModel:
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for module in adapter.network.modules():
            weight, bias = getattr(module, "weight", None), getattr(module, "bias", None)
            if not isinstance(weight, torch.Tensor) or isinstance(module, nn.Embedding):
                continue
            if "norm" in type(module).__name__.lower():
                weight.copy_(torch.rand(weight.shape, generator=gen) + 0.5)
                if isinstance(bias, torch.Tensor):
                    bias.copy_(torch.rand(bias.shape, generator=gen) - 0.5)
            elif weight.dim() == 2 and "lm_head" not in type(module).__name__.lower():
                fan_in = weight.shape[1] if isinstance(module, nn.Linear) else weight.shape[0]
                weight.copy_(torch.randn(weight.shape, generator=gen) * fan_in ** -0.5)
                if isinstance(bias, torch.Tensor):
                    bias.copy_(torch.randn(bias.shape, generator=gen) * 0.1)
    return adapter
