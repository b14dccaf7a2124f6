"""The document's estimate before a long decode: the embedding is a lookup and the output layer runs at the prefill's
last position and each step only (`logits_to_keep`), so a large vocabulary does not multiply the time by the
document's length; the rate is the machine's own measured matrix-product rate, not a constant."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from torch import nn

from transformer.analysis.source import decode_cost


def _adapter(vocab: int) -> SimpleNamespace:
    model = nn.Module()
    model.config = SimpleNamespace(hidden_size=32, head_dim=8, vocab_size=vocab)
    model.embed, model.layer, model.head = nn.Embedding(vocab, 32), nn.Linear(32, 32), nn.Linear(32, vocab)
    return SimpleNamespace(model=model, head_counts=lambda: {"self": (1, 4)}, n_kv_heads=4)


def test_a_large_vocabulary_counts_at_the_steps_only(monkeypatch):
    monkeypatch.setattr(decode_cost, "machine_rate", lambda: 1e10)
    n, steps = 8000, 3
    small, _, _ = decode_cost.estimate_decode(_adapter(100), n, steps)
    large, _, _ = decode_cost.estimate_decode(_adapter(150_000), n, steps)
    body = 2 * (32 * 32 + 32) * (n + steps) + 2 * 4 * 8 * (n + steps) ** 2  # the layer and the scores, every position
    rest = decode_cost.PER_TOKEN_S * (n + steps)
    assert small == pytest.approx((body + 2 * 100 * 32 * (steps + 1)) / (decode_cost.RATE_SHARE * 1e10) + rest)
    assert large == pytest.approx((body + 2 * 150_000 * 32 * (steps + 1)) / (decode_cost.RATE_SHARE * 1e10) + rest)
    assert large < 1.1 * small  # counted at every position, the vocabulary's products would be ~90x the rest


def test_the_rate_is_measured_on_this_machine():
    rate = decode_cost.machine_rate()
    assert 1e8 < rate < 1e14 and decode_cost.machine_rate() == rate  # measured once, kept
