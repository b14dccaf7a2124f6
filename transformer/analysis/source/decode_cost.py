"""The cost model of a stored decode, read by the views before a long decode starts: roughly how long it takes and
how much memory it needs on this machine (the machine's own measured matrix-product rate, not a constant), and the
memory the machine has free."""
from __future__ import annotations

import functools
import os
import time
from typing import Any

import torch

RATE_SHARE = 0.25  # of the machine's measured matrix-product rate that a whole forward sustains, for the estimate
PER_TOKEN_S = 3e-4  # seconds a token costs beside its products: tokenizing, the store's copies, the job's drawing


@functools.cache
def machine_rate() -> float:
    """Float32 products a second this machine's matrix multiply reaches (a 512 x 512 product timed, best of 5)."""
    a = torch.randn(512, 512)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - start)
    return 2 * 512**3 / max(best, 1e-9)


def estimate_decode(adapter: Any, n_tokens: int, steps: int) -> tuple[float, int, int]:
    """(seconds, bytes of memory, bytes of the store) a stored decode of `n_tokens` and `steps` steps will take,
    roughly: the layers' weight products at every position, the output layer at the prefill's last position and each
    step's only (`logits_to_keep`), the embedding a lookup, and the attention's n² score products, at RATE_SHARE of
    the machine's measured matrix-product rate, and PER_TOKEN_S a token (fitted to the Decode page's times for T at
    32k tokens and Q at 8k in bench.app.long_pages: within 2x of both); the store's float32 queries, keys,
    log-sum-exps and value norms, and a few activations of the whole input."""
    layers, heads = adapter.head_counts()["self"]
    cfg: Any = getattr(adapter.model, "config", None) or getattr(adapter.model, "cfg", None)
    width: int = int(getattr(cfg, "hidden_size", None) or getattr(cfg, "d_model", None) or 64)
    d_head = int(getattr(cfg, "head_dim", None) or width // heads)
    kv = int(getattr(adapter, "n_kv_heads", None) or heads)
    n = n_tokens + steps
    vocab = int(getattr(cfg, "vocab_size", None) or getattr(cfg, "tgt_vocab_size", None) or 0)
    params = sum(p.numel() for p in adapter.model.parameters() if not (vocab and tuple(p.shape[:1]) == (vocab,)))
    flops = 2 * params * n + 2 * vocab * width * (steps + 1) + 2 * layers * heads * d_head * n * n
    store = layers * 4 * n * ((heads + kv) * d_head + 2 * heads)
    return flops / (RATE_SHARE * machine_rate()) + PER_TOKEN_S * n, store + 16 * n * width * 4, store


def free_memory() -> int:
    """Bytes of memory the machine has free (available pages), or a large number where it cannot say."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62
