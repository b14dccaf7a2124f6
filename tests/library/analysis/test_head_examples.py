"""What the corpus pass keeps per head (the head page's data): each kept example's peak lies in its decile and is
the model's own row, the first token and specials never count, the kept rows are the corpus's top rows per decile,
the token totals and distance histograms equal a dense recount, and several processes' kept data merge to one's."""
from __future__ import annotations

from collections import defaultdict

import pytest
import torch

from transformer.adapters import adapter_for
from transformer.analysis import DISTANCE_EDGES, corpus_statistics, corpus_sums, merge_sums, stats_from_sums
from transformer.data import TaskSpec, build_char_tokenizer, make_task
from transformer.decode import sink_positions, teacher_forced
from transformer.model import ModelConfig, build_model, default_configs

STRINGS = ["abcdefg", "gfedcba", "bbbcccd", "zyxwvut", "mnopqrs", "aab", "qwerty", "abcabca"]


@pytest.fixture(scope="module")
def seq2seq():
    task = make_task(TaskSpec(name="reverse", n_train=20, n_valid=5, min_len=4, max_len=8))
    cfg, _ = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                             model_overrides={"d_model": 32, "d_ff": 64, "n_heads": 4, "n_encoder_layers": 2,
                                              "n_decoder_layers": 2, "max_len": 64})
    torch.manual_seed(0)
    return adapter_for(build_model(cfg).eval(), task.src_tokenizer, task.tgt_tokenizer, name="reverse-test")


@pytest.fixture(scope="module")
def decoder_only():
    tok = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")
    cfg = ModelConfig(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=32, n_heads=4,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=48, architecture="decoder-only")
    torch.manual_seed(1)
    return adapter_for(build_model(cfg).eval(), tok, tok, name="decoder-only-test")


def _traces(adapter, texts):
    return [teacher_forced(adapter, t, t, top_k=1).trace for t in texts]


@pytest.mark.parametrize("which", ["seq2seq", "decoder_only"])
def test_each_example_peaks_in_its_decile_on_an_ordinary_key(which, request):
    adapter = request.getfixturevalue(which)
    stats = corpus_statistics(adapter, STRINGS, STRINGS)
    traces = _traces(adapter, STRINGS)
    seen = 0
    for kind in adapter.family.kinds:
        for layer in range(2):
            for head in range(4):
                rows = stats.kept.examples(kind, layer, head)
                assert [r["decile"] for r in rows] == sorted((r["decile"] for r in rows), reverse=True)
                for r in rows:
                    seen += 1
                    assert r["decile"] / 10 <= r["peak"] < (r["decile"] + 1) / 10 or r["peak"] == r["decile"] == 1
                    trace = traces[r["sentence"]]
                    _, keys = trace.labels(kind)
                    sinks = set(sink_positions(keys))
                    assert r["key"] not in sinks and 0 in sinks  # the first token and specials never count
                    model_row = trace.weights(kind)[layer, head, r["query"]].float()
                    torch.testing.assert_close(torch.tensor(r["row"]), model_row, atol=1e-6, rtol=0)
                    assert r["peak"] == pytest.approx(float(model_row[r["key"]]), abs=1e-6)
                    ordinary = [k for k in range(len(keys)) if k not in sinks]
                    assert r["peak"] == pytest.approx(float(model_row[ordinary].max()), abs=1e-6)
                    assert tuple(r["keys"]) == tuple(keys)
    assert seen > 0


def test_the_kept_rows_are_each_decile_s_largest_peaks(seq2seq):
    stats = corpus_statistics(seq2seq, STRINGS, STRINGS)
    traces = _traces(seq2seq, STRINGS)
    for kind in seq2seq.family.kinds:
        peaks = defaultdict(list)  # (layer, head, decile) -> every row's peak over the corpus
        for trace in traces:
            w = trace.weights(kind).float()
            ordinary = [k for k in range(w.shape[-1]) if k not in set(sink_positions(trace.labels(kind)[1]))]
            best = w[..., ordinary].max(-1).values
            for (la, he, _), p in zip(torch.cartesian_prod(*(torch.arange(n) for n in best.shape)).tolist(),
                                      best.flatten().tolist(), strict=True):
                if p > 0:
                    peaks[(la, he, min(int(p * 10), 9))].append(p)
        for layer in range(2):
            for head in range(4):
                kept = stats.kept.examples(kind, layer, head)
                for d in range(10):
                    want = sorted(peaks[(layer, head, d)], reverse=True)[:3]
                    got = [r["peak"] for r in kept if r["decile"] == d]
                    assert got == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize("which", ["seq2seq", "decoder_only"])
def test_token_totals_and_distances_equal_a_dense_recount(which, request):
    adapter = request.getfixturevalue(which)
    stats = corpus_statistics(adapter, STRINGS, STRINGS)
    traces = _traces(adapter, STRINGS)
    for kind in adapter.family.kinds:
        to, frm = defaultdict(float), defaultdict(float)
        for trace in traces:
            w = trace.weights(kind)[1, 2].double()  # layer 2, head 3
            queries, keys = trace.labels(kind)
            sinks = set(sink_positions(keys))
            for q in range(w.shape[0]):
                for k in range(w.shape[1]):
                    if k not in sinks:
                        to[keys[k]] += float(w[q, k])
                        frm[queries[q]] += float(w[q, k])
        for direction, want in (("to", to), ("from", frm)):
            got = stats.kept.token_totals(kind, 1, 2, direction)
            assert set(got) == {t for t, v in want.items() if v > 0}
            for token, value in got.items():
                assert value == pytest.approx(want[token], abs=1e-9)
        hist = stats.kept.distance_histogram(kind, 1, 2)
        row = stats.frame.query(f"kind == '{kind}' and layer == 1 and head == 2").iloc[0]
        if kind == "cross":
            assert hist is None
            continue
        assert sum(hist) == pytest.approx(row["rows"], abs=1e-6)  # every row's weight, binned
        dense = [0.0] * len(DISTANCE_EDGES)
        for trace in traces:
            w = trace.weights(kind)[1, 2].double()
            for q in range(w.shape[0]):
                for k in range(w.shape[1]):
                    dense[max(b for b, lo in enumerate(DISTANCE_EDGES) if abs(k - q) >= lo)] += float(w[q, k])
        assert hist == pytest.approx(dense, abs=1e-9)
        if max(len(t.labels(kind)[1]) for t in traces) <= 8:  # bins of one distance each: the distance statistic
            assert sum(d * v for d, v in enumerate(hist[:8])) / row["rows"] == pytest.approx(row["distance"], abs=1e-6)


def test_two_processes_keep_what_one_keeps(seq2seq):
    one = stats_from_sums(corpus_sums(seq2seq, STRINGS, STRINGS)).kept
    two = stats_from_sums(merge_sums([corpus_sums(seq2seq, STRINGS, STRINGS, shard=(r, 2)) for r in (0, 1)])).kept
    for kind in seq2seq.family.kinds:
        for layer, head in ((0, 0), (1, 3)):
            a, b = one.examples(kind, layer, head), two.examples(kind, layer, head)
            assert [(r["sentence"], r["query"], r["decile"]) for r in a] == \
                [(r["sentence"], r["query"], r["decile"]) for r in b]
            for direction in ("to", "from"):
                ta, tb = one.token_totals(kind, layer, head, direction), two.token_totals(kind, layer, head, direction)
                assert ta.keys() == tb.keys() and all(ta[t] == pytest.approx(tb[t], abs=1e-9) for t in ta)


def test_the_json_has_decile_examples_beside_examples(seq2seq):
    out = corpus_statistics(seq2seq, STRINGS[:3], STRINGS[:3]).to_dict()
    assert "examples" in out and set(out["decile_examples"]["kinds"]) == set(seq2seq.family.kinds)
    head = out["decile_examples"]["kinds"]["cross"]["heads"][0]
    assert head["label"] == "cross:L1H1" and head["distance"] is None and head["to"] and head["examples"]
    sentence = str(head["examples"][0]["sentence"])
    assert sentence in out["decile_examples"]["kinds"]["cross"]["sentences"]
