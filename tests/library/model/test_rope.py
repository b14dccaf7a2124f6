"""Our decoder-only architecture with RoPE: no position table, so it reads past the table's 1,024 positions; the
cached step equals recomputing, the weights are the softmax of the rotated queries and keys, old configs and
checkpoints read as the sinusoidal table and decode as before."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from transformer.adapters import adapter_for
from transformer.data import build_char_tokenizer
from transformer.decode import greedy_decode
from transformer.model import ConfigError, ModelConfig, build_model
from transformer.store import open_model

TOK = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")
OLD = Path(__file__).resolve().parents[3] / "checkpoints" / "reverse-decoder-only"


def _rope(max_len: int = 4096, seed: int = 0):
    cfg = ModelConfig(src_vocab_size=TOK.vocab_size, tgt_vocab_size=TOK.vocab_size, d_model=32, n_heads=4,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=max_len, architecture="decoder-only",
                      positions="rope")
    torch.manual_seed(seed)
    return build_model(cfg).eval()


def _rotate(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Llama's rotation written out: pairs (i, i + Dh/2) turned by pos * 10000^(-2i/Dh)."""
    half = x.shape[-1] // 2
    angle = pos[:, None].float() * 10000.0 ** (-torch.arange(half).float() * 2 / x.shape[-1])
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def test_config_reads_far_with_rope_and_old_configs_read_as_the_table():
    cfg = _rope(131_072).cfg
    assert ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    old = {k: v for k, v in cfg.to_dict().items() if k != "positions"} | {"max_len": 64}
    assert ModelConfig.from_dict(old).positions == "sinusoidal"
    with pytest.raises(ConfigError, match="max_len"):
        ModelConfig.from_dict({**old, "max_len": 4096})  # the table stops at 1,024
    with pytest.raises(ConfigError, match="decoder-only"):
        ModelConfig.from_dict({**old, "architecture": "encoder-decoder", "positions": "rope"})
    with pytest.raises(ConfigError, match="positions"):
        ModelConfig.from_dict({**old, "positions": "alibi"})
    model = _rope(131_072)
    assert model.positions is None and model.inv_freq is not None  # no table of 131,072 rows


def test_cached_steps_past_1024_positions_equal_recomputing():
    model = _rope()
    ids = torch.randint(4, TOK.vocab_size, (2, 1100), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full, maps = model.full(ids[:, :1090], ids[:, 1090:], True)
        cache = model.empty_cache(2)
        model.feed(ids[:, :1090], cache, 1090)
        for t in range(1090, 1100):
            step = model.decode_step(ids[:, t:t + 1], cache, need_weights=True)
            torch.testing.assert_close(step.logits, full[:, t], atol=1e-4, rtol=1e-4)
            for layer, w in enumerate(step.decoder_self):
                torch.testing.assert_close(w[:, :, 0], maps[layer][:, :, t, : t + 1], atol=1e-5, rtol=0)


def test_the_weights_are_the_softmax_of_rotated_queries_and_keys():
    model = _rope()
    ids = torch.randint(4, TOK.vocab_size, (1, 40), generator=torch.Generator().manual_seed(1))
    layer = model.layers[0]
    with torch.no_grad():
        _, maps = model.full(ids[:, :30], ids[:, 30:], True)
        h = layer.norms[0](model.embed(ids, 30) * model.scale)  # pre-norm: what the first attention reads
        q, k, _ = layer.self_attn.in_proj(h).chunk(3, dim=-1)
        q, k = (x.view(1, 40, 4, 8).transpose(1, 2)[0] for x in (q, k))
        pos = torch.arange(40)
        scores = _rotate(q, pos) @ _rotate(k, pos).transpose(-2, -1) / math.sqrt(8)
        scores = scores.masked_fill(~torch.ones(40, 40, dtype=torch.bool).tril(), float("-inf"))
    torch.testing.assert_close(maps[0][0], scores.softmax(-1), atol=1e-5, rtol=0)


def test_padding_changes_nothing_with_rope():
    model = _rope()
    a = torch.tensor([[5, 6, 7, 8, 3]])
    padded = torch.tensor([[5, 6, 7, 8, 3], [9, 3, 0, 0, 0]])
    tgt = torch.tensor([[1, 10, 11], [1, 12, 0]])
    with torch.no_grad():
        alone = model(a, tgt[:1])
        both = model(padded, tgt)
    torch.testing.assert_close(both[0], alone[0], atol=1e-5, rtol=0)


@pytest.mark.skipif(not OLD.exists(), reason="no shipped checkpoint")
def test_an_old_checkpoint_still_loads_and_decodes_the_same_tokens():
    adapter = open_model(str(OLD))
    assert adapter.model.cfg.positions == "sinusoidal" and adapter.model.positions is not None
    card = json.loads((OLD / "config.json").read_text()) if (OLD / "config.json").exists() else {}
    assert "positions" not in card.get("model_config", {})  # written before the field existed
    for text, before in (("abcdefg", [10, 9, 8, 7, 5, 4, 2]), ("studio", [18, 12, 22, 24, 23, 2])):
        result = greedy_decode(adapter, text, max_steps=12)  # the tokens it decoded before positions were a choice
        assert [s.token_id for s in result.steps] == before


def test_greedy_decoding_through_the_adapter_with_rope():
    adapter = adapter_for(_rope(), TOK, TOK)
    result = greedy_decode(adapter, "abcde", max_steps=4)
    assert len(result.steps) >= 1 and result.trace.kinds == ("self",)
