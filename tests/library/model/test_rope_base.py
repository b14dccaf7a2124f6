"""RoPE's base as a config field (`rope_base`, `train --rope-base`): old configs read as 10,000 and keep their
frequencies; with base 10^6 the weights are the softmax of queries and keys rotated by that base, the store's tiles
equal the eager weights past 1k tokens and a score taken apart along the residual path still sums to the model's."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tests.helpers import ROOT
from transformer.adapters import adapter_for, attention_store
from transformer.analysis import capture_path, qk_attribution
from transformer.cli import main
from transformer.data import build_char_tokenizer
from transformer.model import ConfigError, Head, ModelConfig, build_model
from transformer.store import load_checkpoint

TOK = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")
RECALL = ROOT / "checkpoints" / "recall"


def _cfg(base: float = 1e6) -> ModelConfig:
    return ModelConfig(src_vocab_size=TOK.vocab_size, tgt_vocab_size=TOK.vocab_size, d_model=32, n_heads=4,
                       n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=4096, architecture="decoder-only",
                       positions="rope", rope_base=base)


def _model(base: float = 1e6):
    torch.manual_seed(0)
    return build_model(_cfg(base)).eval()


def _rotate(x: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    """Llama's rotation written out: pairs (i, i + Dh/2) turned by pos * base^(-2i/Dh)."""
    half = x.shape[-1] // 2
    angle = pos[:, None].double() * base ** (-torch.arange(half).double() * 2 / x.shape[-1])
    cos, sin = angle.cos().float(), angle.sin().float()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def test_old_configs_read_as_base_10000_and_the_base_round_trips():
    cfg = _cfg()
    assert ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))).rope_base == 1e6
    old = {k: v for k, v in cfg.to_dict().items() if k != "rope_base"}
    assert ModelConfig.from_dict(old).rope_base == 10000.0
    for bad in (0.5, "big", float("nan")):
        with pytest.raises(ConfigError, match="rope_base"):
            ModelConfig.from_dict({**old, "rope_base": bad})
    slow, default = _model().inv_freq, build_model(ModelConfig.from_dict(old)).inv_freq
    assert default is not None and slow is not None
    torch.testing.assert_close(default, 1.0 / 10000.0 ** (torch.arange(0, 8, 2).float() / 8))
    assert float(slow[-1]) < float(default[-1])  # the slowest pair turns slower with the larger base


@pytest.mark.skipif(not (RECALL / "config.json").exists(), reason="checkpoints/recall not shipped")
def test_a_shipped_checkpoint_keeps_the_base_its_card_says():
    card = json.loads((RECALL / "config.json").read_text())["model_config"]
    model = load_checkpoint(RECALL, load_optimizer=False).model
    base = card.get("rope_base", 10000.0)
    dh = model.cfg.head_dim
    torch.testing.assert_close(model.inv_freq, 1.0 / base ** (torch.arange(0, dh, 2).float() / dh))


def test_the_weights_are_the_softmax_of_queries_and_keys_rotated_by_the_base():
    model = _model()
    ids = torch.randint(4, TOK.vocab_size, (1, 40), generator=torch.Generator().manual_seed(1))
    layer = model.layers[0]
    with torch.no_grad():
        _, maps = model.full(ids[:, :30], ids[:, 30:], True)
        h = layer.norms[0](model.embed(ids, 30) * model.scale)
        q, k, _ = layer.self_attn.in_proj(h).chunk(3, dim=-1)
        q, k = (x.view(1, 40, 4, 8).transpose(1, 2)[0] for x in (q, k))
        pos = torch.arange(40)
        for base, same in ((1e6, True), (10000.0, False)):
            scores = _rotate(q, pos, base) @ _rotate(k, pos, base).transpose(-2, -1) / math.sqrt(8)
            scores = scores.masked_fill(~torch.ones(40, 40, dtype=torch.bool).tril(), float("-inf"))
            close = torch.allclose(maps[0][0], scores.softmax(-1), atol=1e-5, rtol=0)
            assert close == same, base


def test_store_tiles_equal_the_eager_weights_with_base_a_million():
    adapter = adapter_for(_model(), TOK, TOK, name="tiny-rope-1e6")
    ids = torch.randint(4, TOK.vocab_size, (1, 1500), generator=torch.Generator().manual_seed(0))
    src, tgt = ids[:, :1490], torch.cat([ids[:, :1490], torch.ones(1, 1, dtype=torch.long), ids[:, 1490:]], 1)
    with torch.no_grad():
        insides = adapter.insides(src, tgt)
        store = attention_store(adapter, src, tgt)
    for layer in range(2):
        eager = insides.attentions["self"][layer][0]
        for head in (0, 3):
            torch.testing.assert_close(store.tile("self", layer, head, slice(1200, 1501), slice(0, 1501)),
                                       eager[head][1200:], atol=1e-5, rtol=0)


def test_a_score_taken_apart_sums_to_the_models_with_base_a_million():
    adapter = adapter_for(_model(), TOK, TOK, name="tiny-rope-1e6")
    ids = torch.randint(4, TOK.vocab_size, (1, 1200), generator=torch.Generator().manual_seed(2))
    src, tgt = ids[:, :1190], torch.cat([ids[:, :1190], torch.ones(1, 1, dtype=torch.long), ids[:, 1190:]], 1)
    cap = capture_path(adapter, src, tgt)
    for layer, head, query, key in ((0, 1, 1150, 3), (1, 2, 1190, 600)):
        table = qk_attribution(cap, Head("self", layer, head), query, key)
        score = float(cap.insides.inputs["self"][layer].scores()[0, head, query, key])
        assert abs(table.total - score) <= 1e-4 * max(1.0, abs(score))


def test_train_saves_the_rope_base(tmp_path: Path):
    out = tmp_path / "rope"
    assert main(["train", "--task", "reverse", "--d-model", "16", "--heads", "2", "--dec-layers", "1", "--d-ff", "32",
                 "--n-train", "200", "--n-valid", "10", "--eval-examples", "10", "--warmup", "2", "--steps", "2",
                 "--architecture", "decoder-only", "--positions", "rope", "--rope-base", "1000000",
                 "--out", str(out)]) == 0
    assert load_checkpoint(str(out)).model_config.rope_base == 1e6
    assert json.loads((out / "config.json").read_text())["model_config"]["rope_base"] == 1e6
