"""Local and global layers and log-n query scaling in our decoder-only model: a local layer rotates and sees only its
window, a global one sees everything with no positions, queries past `logn_length` are scaled; the long blockwise
pass, cached steps and padding agree with the dense computation, and the capture, the store and the QK attribution
read the queries and masks the softmax saw."""
from __future__ import annotations

import math
import re

import pytest
import torch

from transformer.adapters import adapter_for, attention_store
from transformer.analysis import capture_path, qk_attribution
from transformer.data import build_char_tokenizer
from transformer.model import ConfigError, Head, ModelConfig, build_model, tile

TOK = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")
WINDOW, LOGN = 7, 64


def _cfg(**kw) -> ModelConfig:
    base = dict(src_vocab_size=TOK.vocab_size, tgt_vocab_size=TOK.vocab_size, d_model=32, n_heads=2,
                n_decoder_layers=3, d_ff=16, dropout=0.0, max_len=4096, architecture="decoder-only", positions="rope",
                window=WINDOW, global_every=3, logn_length=LOGN)
    return ModelConfig(**{**base, **kw})


def _model(**kw):
    torch.manual_seed(0)
    return build_model(_cfg(**kw)).eval()


def _ids(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(4, TOK.vocab_size, (1, n), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("bad, message", [
    (dict(positions="sinusoidal", max_len=512), "window (local layers) needs positions 'rope'"),
    (dict(window=0), "global_every needs a window"),
    (dict(window=1), "window must be 0 (none) or at least 2"),
    (dict(global_every=1), "global_every 1 makes every layer global"),
    (dict(logn_length=1), "logn_length must be 0 (none) or at least 2"),
])
def test_a_bad_layer_setting_is_refused_in_words(bad, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        _cfg(**bad)


def test_old_configs_read_with_every_layer_global_and_unscaled():
    cfg = ModelConfig.from_dict({k: v for k, v in _cfg().to_dict().items()
                                 if k not in ("window", "global_every", "logn_length")})
    assert (cfg.window, cfg.global_every, cfg.logn_length) == (0, 0, 0)
    assert all(cfg.rotates(i) and not cfg.is_local(i) for i in range(3))


def test_local_layers_see_only_their_window_and_global_ones_reach_back():
    model = _model()
    with torch.no_grad():
        _, maps = model.full(torch.tensor([[2]]), _ids(300), need_weights=True)
    i = torch.arange(301)
    far = (i[:, None] - i[None, :]) >= WINDOW
    for layer in (0, 1):
        assert maps[layer][0][:, far].abs().max() == 0
    assert maps[2][0][:, far].sum() > 1.0  # the global layer weighs keys far back


def test_global_layers_have_no_positions():
    model, seen = _model(), {}
    hooks = [layer.self_attn.register_forward_pre_hook(
        lambda m, a, kw, i=i: seen.__setitem__(i, kw.get("rotary") is not None), with_kwargs=True)
        for i, layer in enumerate(model.layers)]
    with torch.no_grad():
        model.full(torch.tensor([[2]]), _ids(20))
    for h in hooks:
        h.remove()
    assert seen == {0: True, 1: True, 2: False}


def test_the_long_blockwise_pass_cached_steps_and_padding_agree_with_the_dense_weights():
    model, ids, src = _model(), _ids(900), torch.tensor([[2]])
    with torch.no_grad():
        dense, _ = model.full(src, ids, need_weights=True)  # the weights path: dense band masks
        fast, _ = model.full(src, ids)  # 901 rows: the local layers a block of rows at a time
        torch.testing.assert_close(fast, dense, atol=1e-5, rtol=0)
        cache = model.empty_cache(1)
        first = model.feed(torch.cat([src, ids[:, :600]], 1), cache, 1).logits
        steps = torch.stack([model.feed(ids[:, j:j + 1], cache).logits for j in range(600, 900)], 1)
        torch.testing.assert_close(first, dense[:, 600], atol=1e-5, rtol=0)
        torch.testing.assert_close(steps, dense[:, 601:], atol=1e-5, rtol=0)
        padded = torch.cat([ids[:, :120], torch.zeros(1, 30, dtype=torch.long)], 1)
        batch, _ = model.full(torch.tensor([[2], [2]]), torch.cat([ids[:, :150], padded]))
        alone, _ = model.full(src, ids[:, :120])
        torch.testing.assert_close(batch[1, :121], alone[0], atol=1e-5, rtol=0)


def test_logn_scaling_sharpens_only_the_rows_past_its_length():
    scaled, plain = _model(), _model(logn_length=0)
    plain.load_state_dict(scaled.state_dict())
    with torch.no_grad():
        _, a = scaled.full(torch.tensor([[2]]), _ids(400), need_weights=True)
        _, b = plain.full(torch.tensor([[2]]), _ids(400), need_weights=True)
    torch.testing.assert_close(a[2][0][:, :LOGN], b[2][0][:, :LOGN])  # rows that see at most LOGN keys: unscaled
    torch.testing.assert_close(a[0][0], b[0][0])  # a local layer sees at most its window: never scaled
    peak = lambda w: w[0][:, 300:].max(-1).values.mean()  # noqa: E731
    assert peak(a[2]) > peak(b[2])  # past it, a global query's weights are sharper


def test_the_capture_recomputes_every_weight_and_the_store_every_tile():
    adapter = adapter_for(_model(), TOK, TOK, name="tiny-local-global")
    ids = _ids(700)
    src, tgt = ids[:, :690], torch.cat([ids[:, :690], torch.ones(1, 1, dtype=torch.long), ids[:, 690:]], 1)
    with torch.no_grad():
        insides = adapter.insides(src, tgt)
        store = attention_store(adapter, src, tgt)
    for layer in range(3):
        inputs, eager = insides.inputs["self"][layer], insides.attentions["self"][layer][0]
        scores = inputs.scale * inputs.queries[0] @ inputs.keys[0].transpose(-1, -2) + inputs.terms["mask"]
        torch.testing.assert_close(scores.softmax(-1), eager, atol=1e-5, rtol=0)
        assert (inputs.rules.window if inputs.rules else None) == (WINDOW if layer < 2 else None)
        torch.testing.assert_close(tile(store, "self", layer, 1)[600:, :], eager[1][600:], atol=1e-5, rtol=0)


def test_the_qk_attribution_adds_up_to_the_scaled_score_of_a_global_query():
    adapter = adapter_for(_model(), TOK, TOK, name="tiny-local-global")
    ids = _ids(200)
    src, tgt = ids[:, :190], torch.cat([ids[:, :190], torch.ones(1, 1, dtype=torch.long), ids[:, 190:]], 1)
    cap = capture_path(adapter, src, tgt)
    for layer, head, key in ((2, 0, 3), (2, 1, 150), (0, 1, 197)):  # global queries past LOGN: scaled; a local one
        table = qk_attribution(cap, Head("self", layer, head), 199, key)
        score = float(cap.insides.inputs["self"][layer].scores()[0, head, 199, key])
        assert abs(table.total - score) <= 1e-4 * max(1.0, abs(score))
        assert table.rotated == (layer == 0)  # the global layer has no positions
        assert (table.query_factor is not None) == (layer == 2)  # a local query sees 7 keys: never scaled
        assert ("log-n scaling" in table.rules_line()) == (layer == 2)
    assert qk_attribution(cap, Head("self", 2, 0), 199, 3).query_factor == pytest.approx(math.log(200) / math.log(LOGN))


def test_a_long_chunk_after_a_cache_reads_causally_without_a_mask():
    """A prompt fed after a cached source (the stored decode's prefill): its queries are the chunk's last positions;
    the blockwise pass (no chunk x keys mask) equals feeding it in one dense pass with the weights."""
    model, ids = _model(), _ids(1300)
    with torch.no_grad():
        cache = model.empty_cache(1)
        model.feed(torch.tensor([[2]]), cache, 1)
        blocks = model.feed(ids, cache).logits  # 1,300 rows after 1 cached: causal blocks in every layer
        dense, _ = model.full(torch.tensor([[2]]), ids, need_weights=True)
    torch.testing.assert_close(blocks, dense[:, -1], atol=1e-5, rtol=0)
