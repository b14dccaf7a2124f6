"""The long-range detectors read only the rows they need: through the attention store (fed a chunk at a time, no
n x n map) the rows' weights and logits equal the plain forward's maps and logits, and the retrieval scores and
pattern labels equal the full-map ones, on tiny models of every family the detectors read (ours decoder-only with
RoPE and with a position table, GPT-2, Llama, Qwen2; encoder-decoders, ours and BART, keep their maps: the store
does not read them) and on the shipped recall model at 512 tokens."""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.hf_causal_models import CAUSAL
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.tiny_models import tiny_reverse_model
from transformer.adapters import adapter_for
from transformer.analysis import long_range_dict, long_range_heads, retrieval_scores
from transformer.analysis.heads.detectors import _causal_setup
from transformer.analysis.heads.long_range import _causal_patterns, _draw, _pool
from transformer.analysis.source.causal_rows import causal_rows
from transformer.data import build_char_tokenizer
from transformer.store import open_model

LENGTH = 200  # tokens: several chunks of 64 (the smallest) through the store
STORE, MAPS = 0, 10**9  # `store_above`: every input through the store / none


def _ours(positions: str):
    from transformer.model import ModelConfig, build_model
    tok = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")
    cfg = ModelConfig(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=32, n_heads=4,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=256, architecture="decoder-only",
                      positions=positions)
    torch.manual_seed(0)
    return adapter_for(build_model(cfg).eval(), tok, tok, name=f"ours-{positions}")


@pytest.fixture(scope="module", params=["ours-rope", "ours-sinusoidal", *CAUSAL, "ours-reverse", "bart"])
def adapter(request, tmp_path_factory):
    name = request.param
    if name.startswith("ours-") and name != "ours-reverse":
        return _ours(name.removeprefix("ours-"))
    if name == "ours-reverse":
        model, src_tok, tgt_tok = tiny_reverse_model(0)
        return adapter_for(model, src_tok, tgt_tok, name=name)
    builder = build_seq2seq if name == "bart" else build_causal
    return open_model(str(builder(name, tmp_path_factory.mktemp(name) / name)))


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr("transformer.analysis.source.causal_rows.CHUNK_BYTES", 1)  # 64 tokens a chunk


def _inputs(adapter, n: int):
    src, prefix = _causal_setup(adapter)
    n = min(n, adapter.max_target_len)
    return src, [*prefix, *_draw(_pool(adapter), n - len(prefix), torch.Generator().manual_seed(1), distinct=False)]


def test_the_rows_weights_and_logits_equal_the_full_maps(adapter):
    src, inputs = _inputs(adapter, LENGTH)
    n = len(inputs)
    for rows, with_logits in [(torch.arange(n - 7, n - 1), True), (torch.arange(max(0, n - 64), n), False)]:
        mine = causal_rows(adapter, src, inputs, rows, with_logits=with_logits, store_above=STORE)
        full = causal_rows(adapter, src, inputs, rows, store_above=MAPS)
        assert mine.stored == adapter.family.prompt_in_decoder and not full.stored
        assert mine.n_layers == full.n_layers == adapter.head_counts()[adapter.family.decoder_kind][0]
        for w, want in zip(mine.layers(), full.layers(), strict=True):
            assert w.shape == want.shape == (want.shape[0], len(rows), n)
            torch.testing.assert_close(w, want, atol=2e-5, rtol=0)
        if with_logits:
            torch.testing.assert_close(mine.logits, full.logits, atol=1e-4, rtol=1e-4)
        else:
            assert mine.logits is None or not mine.stored


def _same_frames(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert a["pattern"].tolist() == b["pattern"].tolist() and a["label"].tolist() == b["label"].tolist()
    numbers = a.select_dtypes("number").columns
    pd.testing.assert_frame_equal(a[numbers], b[numbers], atol=1e-5, rtol=0)


def test_the_scores_and_labels_equal_the_full_map_ones(adapter):
    length = min(LENGTH, adapter.max_target_len)
    scores, info = retrieval_scores(adapter, length, store_above=STORE)
    want, want_info = retrieval_scores(adapter, length, store_above=MAPS)
    assert torch.equal(scores, want) and info == want_info
    _same_frames(_causal_patterns(adapter, length, 0, STORE), _causal_patterns(adapter, length, 0, MAPS))


RECALL = ROOT / "checkpoints" / "recall"


@pytest.mark.skipif(not (RECALL / "config.json").exists(), reason="checkpoints/recall not shipped")
def test_on_the_shipped_recall_model_at_512_the_store_finds_what_the_maps_find():
    adapter = open_model(RECALL)
    mine, full = long_range_heads(adapter, 512, store_above=STORE), long_range_heads(adapter, 512, store_above=MAPS)
    _same_frames(mine.frame, full.frame)
    assert mine.retrieval == full.retrieval and mine.retrieval["copy_rate"] > 0  # it copies: the scores say something
    assert long_range_dict(mine) == long_range_dict(full)
