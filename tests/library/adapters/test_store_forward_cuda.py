"""The store's forward on a CUDA device: a Hugging Face causal model on the GPU runs CUDA's fused kernel that returns
the log-sum-exp (memory-efficient attention) where the CPU runs its flash kernel, and fills the same store, kept on
the CPU: the same tokens, log-sum-exps and tiles as the CPU run at ~1,300 tokens (a sliding window's mask included),
and the kernels' outputs and log-sum-exps equal the CPU's with a mask, grouped heads, a soft-cap and sinks."""
from __future__ import annotations

import json

import pytest
import torch

from tests.helpers.hf_causal_models import SIZE, build, lines
from transformer.adapters.store_forward import capped_attention, cuda_attention
from transformer.decode import greedy_decode
from transformer.store import open_model

CUDA_REASON = "no CUDA device on this machine: the store's forward runs on CUDA where torch.cuda.is_available()"
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason=CUDA_REASON)
TEXT = "\n".join(lines(34))  # ~1,300 tokens of the toy tokenizer


def _cpu_kernel(q, k, v, mask, causal):
    per_group = q.shape[1] // k.shape[1]
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k.repeat_interleave(per_group, 1), v.repeat_interleave(per_group, 1), 0.0, causal, attn_mask=mask, scale=0.3)


def test_the_cuda_kernel_equals_the_cpu_kernel_with_a_mask_and_grouped_heads():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 4, 37, 8, generator=g) for _ in range(3))
    k, v = k[:, :2], v[:, :2]  # grouped-query attention: two key/value heads
    seen = (torch.arange(37)[None, :] > torch.arange(37)[:, None] - 5) & torch.ones(37, 37, dtype=torch.bool).tril()
    window = torch.zeros(1, 1, 37, 37).masked_fill_(~seen, float("-inf"))  # 37 keys: not a multiple of 16
    for mask, causal in ((window, False), (None, True)):
        out, lse = cuda_attention(q.cuda(), k.cuda(), v.cuda(), None if mask is None else mask.cuda(), 0.3, causal)
        want_out, want_lse = _cpu_kernel(q, k, v, mask, causal)
        assert lse.shape == want_lse.shape
        torch.testing.assert_close(out.cpu(), want_out, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(lse.cpu(), want_lse, atol=1e-5, rtol=1e-5)


def test_capped_attention_on_cuda_equals_the_cpu():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 4, 600, 8, generator=g) * 3 for _ in range(3))
    sinks = torch.tensor([0.0, 1.0, 2.0, -1.0])
    want = capped_attention(q, k[:, :2], v[:, :2], None, 0.3, 5.0, True, sinks)
    got = capped_attention(q.cuda(), k[:, :2].cuda(), v[:, :2].cuda(), None, 0.3, 5.0, True, sinks.cuda())
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a.cpu(), b, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("window", [None, 16])
def test_the_stored_decode_on_cuda_fills_the_cpu_runs_store(window, tmp_path):
    folder = build("qwen2", tmp_path / "qwen2", size={**SIZE, "positions": 4096})
    if window is not None:
        config = json.loads((folder / "config.json").read_text())
        config.update(use_sliding_window=True, sliding_window=window, max_window_layers=1,
                      layer_types=["full_attention", "sliding_attention"])
        (folder / "config.json").write_text(json.dumps(config))
    adapter = open_model(str(folder))
    prompt = adapter.decoder_prefix(adapter.tokenize_source(TEXT))
    assert len(prompt) > 1024
    cpu = greedy_decode(adapter, TEXT, max_steps=3, keep="store")
    steps, store = cpu.steps, cpu.trace.store
    adapter.model.to("cuda")
    try:
        result = greedy_decode(adapter, TEXT, max_steps=3)  # the one entry, "auto" past the threshold, on the GPU
    finally:
        adapter.model.to("cpu")
    gpu_store = result.trace.store
    assert gpu_store is not None and [s.token_id for s in result.steps] == [s.token_id for s in steps]
    for layer in range(2):
        one, gpu = store.layer("self", layer), gpu_store.layer("self", layer)
        assert gpu.lse.device.type == gpu.queries.device.type == gpu.keys.device.type == "cpu"
        assert gpu.rules.window == one.rules.window
        torch.testing.assert_close(gpu.lse, one.lse, atol=1e-4, rtol=1e-5)
        torch.testing.assert_close(gpu.value_norms, one.value_norms, atol=1e-4, rtol=1e-4)
        for head in range(4):
            for rows in (slice(-4, None), slice(0, 300)):
                torch.testing.assert_close(gpu_store.tile("self", layer, head, rows),
                                           store.tile("self", layer, head, rows), atol=1e-4, rtol=0)
