"""A model built for its shapes (loading a checkpoint checks the file against them; the Train page counts a config's
parameters) has the real model's every tensor shape, holds no values, and leaves later models initialised as usual."""
from __future__ import annotations

import pytest
import torch

from transformer.model import ModelConfig, build_model, shapes_only

CONFIGS = {
    "encoder-decoder": dict(architecture="encoder-decoder"),
    "decoder-only, sinusoidal": dict(architecture="decoder-only"),
    "decoder-only, RoPE": dict(architecture="decoder-only", positions="rope"),
    "encoder-only": dict(architecture="encoder-only"),
}


@pytest.mark.parametrize("extra", CONFIGS.values(), ids=CONFIGS.keys())
def test_a_shapes_only_model_has_the_real_models_shapes_and_no_values(extra):
    cfg = ModelConfig(src_vocab_size=23, tgt_vocab_size=23, d_model=30, n_heads=3, n_encoder_layers=2,
                      n_decoder_layers=2, d_ff=40, max_len=17, **extra)
    with shapes_only():
        shapes = build_model(cfg)
    real = build_model(cfg)
    expected = {**dict(real.named_parameters()), **dict(real.named_buffers())}
    assert {n: t.shape for n, t in expected.items()} == {
        n: t.shape for n, t in [*shapes.named_parameters(), *shapes.named_buffers()]}
    assert all(t.is_meta for t in [*shapes.parameters(), *shapes.buffers()])
    assert shapes.num_parameters() == real.num_parameters()
    assert not any(t.is_meta for t in [*real.parameters(), *real.buffers()])
    assert all(p.std() > 0 for p in real.parameters() if p.dim() > 1)  # initialised at random, as ever


def test_inside_shapes_only_fills_are_skipped_and_after_it_they_fill():
    with shapes_only():
        inside = torch.empty(3, 4)
        assert torch.nn.init.normal_(inside) is inside and inside.is_meta
    outside = torch.zeros(3, 4)
    torch.nn.init.normal_(outside)
    assert outside.abs().sum() > 0
