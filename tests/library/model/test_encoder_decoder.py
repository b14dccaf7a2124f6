"""The model: masks, capture invariance, the SDPA and explicit paths, nn.MultiheadAttention parity, KV cache."""
import pytest
import torch

from transformer.model import (
    ConfigError,
    ModelConfig,
    MultiHeadAttention,
    Seq2SeqTransformer,
    attention,
    attention_weights,
    dropout,
)

PAD = 0


def make_model(norm: str = "pre", layers: int = 2, dropout: float = 0.1) -> Seq2SeqTransformer:
    torch.manual_seed(0)
    cfg = ModelConfig(src_vocab_size=20, tgt_vocab_size=22, d_model=32, n_heads=4, n_encoder_layers=layers,
                      n_decoder_layers=layers, d_ff=64, dropout=dropout, max_len=40, norm=norm)
    return Seq2SeqTransformer(cfg).eval()


def padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, 20, (3, 9), generator=g)
    src[1, 5:] = PAD
    src[2, 7:] = PAD
    tgt = torch.randint(4, 22, (3, 8), generator=g)
    tgt[:, 0] = 1
    tgt[0, 6:] = PAD
    return src, tgt


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_attention_rows_sum_to_one_and_masked_positions_are_exactly_zero(norm):
    model = make_model(norm)
    src, tgt = padded_batch()
    with torch.no_grad():
        _, maps = model.forward_with_attention(src, tgt)
    src_pad = src == PAD
    tgt_pad = tgt == PAD
    for kind in ("encoder_self", "decoder_self", "cross"):
        assert len(maps[kind]) == 2
        for w in maps[kind]:
            torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5, rtol=0)
    for w in maps.encoder_self + maps.cross:
        assert (w.transpose(1, 3)[src_pad] == 0).all()  # padded source keys get exactly 0
    t = tgt.size(1)
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    for w in maps.decoder_self:
        assert (w[:, :, future] == 0).all()  # causal: no query sees a later position
        assert (w.transpose(1, 3)[tgt_pad] == 0).all()  # padded target keys get exactly 0


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_capture_does_not_change_logits_or_tokens(norm):
    model = make_model(norm)
    src, tgt = padded_batch()
    with torch.no_grad():
        plain = model(src, tgt)
        captured, _ = model.forward_with_attention(src, tgt)
    assert torch.equal(plain, captured)
    assert torch.equal(plain.argmax(-1), captured.argmax(-1))


def test_sdpa_and_explicit_paths_agree():
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 4, 7, 16, generator=g) for _ in range(3))
    mask = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    mask[1, ..., 5:] = False
    for is_causal, m in ((False, mask), (True, None)):
        fast, none = attention(q, k, v, m, need_weights=False, is_causal=is_causal)
        assert none is None
        explicit = attention_weights(q, k, m, is_causal) @ v
        torch.testing.assert_close(fast, explicit, atol=1e-5, rtol=0)


def test_attention_module_matches_torch_multihead_attention():
    torch.manual_seed(3)
    ref = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
    mine = MultiHeadAttention(d_model=32, n_heads=4, dropout=0.0).eval()
    with torch.no_grad():
        mine.in_proj.weight.copy_(ref.in_proj_weight)
        mine.in_proj.bias.copy_(ref.in_proj_bias)
        mine.out_proj.load_state_dict(ref.out_proj.state_dict())
    x, memory = torch.randn(2, 5, 32), torch.randn(2, 6, 32)
    key_padding = torch.zeros(2, 6, dtype=torch.bool)
    key_padding[1, 4:] = True
    with torch.no_grad():
        ref_out, ref_w = ref(x, memory, memory, key_padding_mask=key_padding, average_attn_weights=False)
        out, w = mine(x, kv=mine.project_kv(memory), mask=(~key_padding)[:, None, None, :], need_weights=True)
        self_ref, self_ref_w = ref(x, x, x, average_attn_weights=False)
        self_out, self_w = mine(x, need_weights=True)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=0)
    torch.testing.assert_close(self_out, self_ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(self_w, self_ref_w, atol=1e-6, rtol=0)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_incremental_decode_step_matches_full_decoder(norm):
    model = make_model(norm)
    src, tgt = padded_batch()
    tgt = tgt[1:]  # rows without target padding
    src = src[1:]
    with torch.no_grad():
        full, maps = model.forward_with_attention(src, tgt)
        memory, mask = model.encode(src)
        cache = model.start_cache(memory)
        for t in range(tgt.size(1)):
            out = model.decode_step(tgt[:, t:t + 1], cache, mask, need_weights=True)
            logits, ws, wc = out.logits, out.decoder_self, out.cross
            torch.testing.assert_close(logits, full[:, t], atol=1e-5, rtol=0)
            for layer in range(2):
                torch.testing.assert_close(ws[layer][:, :, 0], maps.decoder_self[layer][:, :, t, : t + 1],
                                           atol=1e-6, rtol=0)
                torch.testing.assert_close(wc[layer][:, :, 0], maps.cross[layer][:, :, t], atol=1e-6, rtol=0)


def test_head_mask_removes_a_heads_contribution():
    model = make_model()
    src, tgt = padded_batch()
    keep_all = {"cross": torch.ones(2, 4)}
    drop = {"cross": torch.ones(2, 4)}
    drop["cross"][1, 2] = 0.0
    with torch.no_grad():
        base = model(src, tgt)
        same, _ = model.forward_with_attention(src, tgt, head_mask=keep_all)
        ablated, _ = model.forward_with_attention(src, tgt, head_mask=drop)
        # the ablated head's output is what a zeroed slice of out_proj's input would give
        layer = model.decoder[1].cross_attn
        w = layer.out_proj.weight.clone()
        layer.out_proj.weight[:, 2 * 8: 3 * 8] = 0
        manual = model(src, tgt)
        layer.out_proj.weight.copy_(w)
    torch.testing.assert_close(same, base, atol=1e-6, rtol=0)
    assert (ablated - base).abs().max() > 1e-4
    torch.testing.assert_close(ablated, manual, atol=1e-5, rtol=0)


def test_eval_mode_is_deterministic_and_train_mode_uses_dropout():
    model = make_model(dropout=0.3)
    src, tgt = padded_batch()
    with torch.no_grad():
        assert torch.equal(model(src, tgt), model(src, tgt))
        model.train()
        assert not torch.equal(model(src, tgt), model(src, tgt))


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_dropout_keeps_the_right_share_unbiased_and_independent(p):
    torch.manual_seed(0)
    x = torch.rand(257, 129) + 0.5  # odd sizes: the mask is cut from 64-bit words four slices at a time
    y = dropout(x, p, training=True)
    kept = y != 0
    assert abs(kept.float().mean().item() - (1 - p)) < 0.01
    assert abs(y.mean().item() / x.mean().item() - 1) < 0.02  # inverted dropout keeps the expectation
    scale = y[kept] / x[kept]  # one exact 1 / (1 - p) for every kept element (p to 2^-16), in bf16 too
    assert torch.allclose(scale, torch.full_like(scale, 1 / (1 - p)), rtol=1e-4)
    half = dropout(x.bfloat16(), p, training=True)
    assert half.dtype == torch.bfloat16
    half_kept = half != 0
    assert abs((half.float()[half_kept] / x.bfloat16().float()[half_kept]).mean().item() * (1 - p) - 1) < 1e-3
    a, b = kept.flatten()[:-1].float(), kept.flatten()[1:].float()  # neighbours share a 64-bit word
    assert abs(torch.corrcoef(torch.stack([a, b]))[0, 1].item()) < 0.02
    torch.manual_seed(0)
    assert torch.equal(dropout(torch.rand(257, 129) + 0.5, p, training=True), y)  # seeded like the rest
    assert dropout(x, p, training=False) is x


def test_too_long_input_is_refused():
    model = make_model()
    with pytest.raises(ValueError, match="max_len"):
        model(torch.ones(1, 41, dtype=torch.long), torch.ones(1, 3, dtype=torch.long))


@pytest.mark.parametrize("bad", [dict(n_heads=0), dict(d_model=30, n_heads=4), dict(d_model=10**7),
                                 dict(dropout=1.5), dict(norm="middle"), dict(n_encoder_layers=100)])
def test_config_rejects_bad_values_with_a_clear_message(bad):
    args = dict(src_vocab_size=20, tgt_vocab_size=20) | bad
    with pytest.raises(ConfigError):
        ModelConfig(**args)
