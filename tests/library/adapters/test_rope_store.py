"""Our decoder-only model with RoPE through the capture and the store: the captured queries and keys are the rotated
ones, every tile recomputed from the store equals the eager weight at 2k tokens, and the store's fused forward
(prefill, then one row a step) gives the same tokens and rows as greedy decoding with maps."""
from __future__ import annotations

import torch

from transformer.adapters import adapter_for, attention_store
from transformer.data import build_char_tokenizer
from transformer.decode import greedy_decode
from transformer.model import ModelConfig, build_model, tile

TOK = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")


def _lm(max_len: int = 4096):
    cfg = ModelConfig(src_vocab_size=TOK.vocab_size, tgt_vocab_size=TOK.vocab_size, d_model=32, n_heads=4,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=max_len, architecture="decoder-only",
                      positions="rope")
    torch.manual_seed(0)
    return adapter_for(build_model(cfg).eval(), TOK, TOK, name="tiny-rope")


def test_store_tiles_equal_the_eager_weights_at_two_thousand_tokens():
    adapter = _lm()
    ids = torch.randint(4, TOK.vocab_size, (1, 2000), generator=torch.Generator().manual_seed(0))
    src, tgt = ids[:, :1990], torch.cat([ids[:, :1990], torch.ones(1, 1, dtype=torch.long), ids[:, 1990:]], 1)
    with torch.no_grad():
        insides = adapter.insides(src, tgt)
        store = attention_store(adapter, src, tgt)
    for layer in range(2):
        eager = insides.attentions["self"][layer][0]
        for head in (0, 3):
            torch.testing.assert_close(store.tile("self", layer, head, slice(1500, 2001), slice(0, 2001)),
                                       eager[head][1500:], atol=1e-5, rtol=0)
        torch.testing.assert_close(tile(store, "self", layer, 1)[:300, :300], eager[1][:300, :300], atol=1e-5, rtol=0)


def test_the_stored_forward_decodes_the_same_tokens_and_rows_as_greedy():
    adapter = _lm()
    text = "thequickbrownfoxjumpsoverthelazydog" * 40  # 1,400 characters: past the table's 1,024
    source = adapter.tokenize_source(text)
    prompt = adapter.decoder_prefix(source)
    stored = greedy_decode(adapter, text, max_steps=4)  # "auto": past the threshold, the store
    steps, store = stored.steps, stored.trace.store
    result = greedy_decode(adapter, text, max_steps=4, keep="maps")
    assert [s.token_id for s in steps] == [s.token_id for s in result.steps]
    n = len(prompt) + len(steps) - 1  # every row fed: the prompt's, then one a step
    for layer in range(2):
        eager = result.trace.weights("self")[layer]  # (H, rows, keys) over the whole sequence
        assert eager.shape[-1] == n
        for head in range(4):
            rows = store.tile("self", layer, head, slice(n - 8, n), slice(0, n))
            torch.testing.assert_close(rows, eager[head][n - 8:], atol=1e-5, rtol=0)
