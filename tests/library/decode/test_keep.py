"""What a greedy decode keeps (`keep`: auto, maps, store): one threshold decides "auto", every front end asks the
one entry, and the one step loop gives the same tokens, forced or sampled, whichever it keeps."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from tests.helpers.our_models import _ours
from transformer.decode import STORE_ABOVE, InputError, Sampling, greedy_decode, keeps_store

TEXT = "abcdefgabc"


@pytest.fixture(scope="module")
def causal():
    return _ours("ours-decoder-only-pre")


@pytest.fixture(scope="module")
def seq2seq():
    return _ours("ours-pre")


def test_auto_keeps_the_store_past_the_threshold_for_a_decoder_only_prompt_only(causal, seq2seq):
    assert not keeps_store(causal, STORE_ABOVE) and keeps_store(causal, STORE_ABOVE + 1)
    assert not keeps_store(seq2seq, 10 * STORE_ABOVE)  # an encoder-decoder's decoder starts with its start ids
    assert keeps_store(causal, 3, "store") and not keeps_store(causal, 10 * STORE_ABOVE, "maps")
    assert keeps_store(causal, 100, above=64) and not keeps_store(causal, 64, above=64)


def test_a_keep_the_model_cannot_honour_is_refused_in_one_line(causal, seq2seq):
    with pytest.raises(InputError, match="keep must be one of auto, maps, store, not 'all'"):
        greedy_decode(causal, TEXT, keep="all")
    with pytest.raises(InputError, match="not a decoder-only model"):
        greedy_decode(seq2seq, TEXT, keep="store")
    with pytest.raises(InputError, match="Switching heads off needs the maps"):
        greedy_decode(causal, TEXT, keep="store", head_mask={"self": torch.ones(3, 4)})


def test_forced_and_sampled_steps_are_the_same_with_the_store(causal):
    forced = causal.ids_to_tokens(causal.target_ids("gfe"))
    maps = greedy_decode(causal, TEXT, max_steps=5, forced=forced, keep="maps")
    store = greedy_decode(causal, TEXT, max_steps=5, forced=forced, keep="store")
    assert store.trace.store is not None and maps.trace.store is None
    assert [s.token_id for s in store.steps] == [s.token_id for s in maps.steps]
    assert [s.forced for s in store.steps][:3] == [True] * 3
    sampling = Sampling(temperature=1.5, seed=3)
    drawn = [greedy_decode(causal, TEXT, max_steps=6, sampling=sampling, keep=k) for k in ("maps", "store")]
    assert drawn[0].mode == drawn[1].mode == "sampled"
    assert [s.token_id for s in drawn[0].steps] == [s.token_id for s in drawn[1].steps]
    for a, b in zip(maps.steps, store.steps, strict=True):
        assert a.prob == pytest.approx(b.prob, abs=1e-5)


def test_a_stored_decode_defaults_to_a_few_steps_and_its_trace_reads_as_the_maps(causal):
    from transformer.decode import STORED_STEPS
    store = greedy_decode(causal, TEXT, keep="store", stop_at_end=False)
    maps = greedy_decode(causal, TEXT, max_steps=len(store.steps), keep="maps", stop_at_end=False)
    n_start = len(causal.decoder_prefix(causal.tokenize_source(TEXT)))
    assert len(store.steps) == min(STORED_STEPS, causal.max_target_len - n_start + 1) < len(
        greedy_decode(causal, TEXT, keep="maps", stop_at_end=False).steps)
    assert store.trace.decoder_input_tokens == maps.trace.decoder_input_tokens
    assert store.trace.step_offset == maps.trace.step_offset
    torch.testing.assert_close(store.trace.weights("self"), maps.trace.weights("self"), atol=1e-5, rtol=0)


def test_the_threshold_is_defined_once_and_the_folded_decodes_are_gone():
    from tests.helpers import ROOT
    files = [p for folder in ("transformer", "ui", "pages", "bench", "tests") for p in (ROOT / folder).rglob("*.py")]
    texts = {p: p.read_text(encoding="utf-8") for p in files if p.resolve() != Path(__file__).resolve()}
    assert [p.name for p, t in texts.items() if "STORE_ABOVE" " = " in t] == ["keep.py"]
    folded = re.compile(r"\b(stored" r"_greedy|def stored_decode\(|def decode_text\()")  # spelled apart
    assert [p.name for p, t in texts.items() if folded.search(t)] == []
