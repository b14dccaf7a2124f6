"""Head statistics over a corpus: each number is the model's own attention averaged over every query row, a head
that attends uniformly has entropy log n, the Jensen-Shannon clustering puts identical heads together, every family
(an encoder-only BERT included) is covered, and bad corpus files get one clear message."""
from __future__ import annotations

import gzip
import json
import math

import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.hf_masked_models import build as build_masked
from transformer.adapters import adapter_for
from transformer.analysis import average_linkage_order, corpus_statistics, is_punctuation
from transformer.cli import main
from transformer.data import CorpusError, TaskSpec, make_task, read_corpus
from transformer.decode import teacher_forced
from transformer.model import build_model, default_configs
from transformer.store import load_checkpoint, open_model

STRINGS = ["abcdefg", "gfedcba", "bbbcccd", "zyxwvut", "mnopqrs"]  # all 7 letters: 8 encoder keys with </s>


@pytest.fixture(scope="module")
def reverse_lm():
    task = make_task(TaskSpec(name="reverse", n_train=20, n_valid=5, min_len=4, max_len=8))
    cfg, _ = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                             model_overrides={"d_model": 32, "d_ff": 64, "n_heads": 4, "n_encoder_layers": 2,
                                              "n_decoder_layers": 2, "max_len": 64})
    torch.manual_seed(0)
    model = build_model(cfg).eval()
    attn = model.encoder.layers[0].self_attn if hasattr(model.encoder, "layers") else None
    if attn is None:
        attn = next(m for name, m in model.named_modules() if name.startswith("encoder") and hasattr(m, "in_proj"))
    d_head = attn.d_model // attn.n_heads
    with torch.no_grad():  # encoder layer 1, head 1: queries of 0, so every score is 0 and the row uniform
        attn.in_proj.weight[:d_head] = 0
        attn.in_proj.bias[:d_head] = 0
    return adapter_for(model, task.src_tokenizer, task.tgt_tokenizer, name="reverse-test")


def test_a_uniform_head_has_entropy_log_n(reverse_lm):
    stats = corpus_statistics(reverse_lm, STRINGS, STRINGS)
    row = stats.frame.query("kind == 'encoder_self' and layer == 0 and head == 0").iloc[0]
    assert row["entropy"] == pytest.approx(math.log(8), abs=1e-5)
    assert row["max_weight"] == pytest.approx(1 / 8, abs=1e-6) and row["first"] == pytest.approx(1 / 8, abs=1e-6)
    others = stats.frame.query("kind == 'encoder_self' and not (layer == 0 and head == 0)")
    assert (others["entropy"] < math.log(8) - 1e-3).all()


def test_each_statistic_is_the_models_attention_averaged_over_rows(reverse_lm):
    texts = STRINGS[:3]
    stats = corpus_statistics(reverse_lm, texts, texts)
    traces = [teacher_forced(reverse_lm, t, t).trace for t in texts]
    for kind in ("encoder_self", "decoder_self", "cross"):
        w = torch.cat([tr.weights(kind)[1, 2] for tr in traces])  # layer 2, head 3: every row of every sentence
        row = stats.frame.query(f"kind == '{kind}' and layer == 1 and head == 2").iloc[0]
        assert row["rows"] == w.shape[0]
        assert row["max_weight"] == pytest.approx(float(w.max(-1).values.mean()), abs=1e-6)
        assert row["first"] == pytest.approx(float(w[:, 0].mean()), abs=1e-6)
        if kind != "cross":
            same = torch.cat([tr.weights(kind)[1, 2].diagonal() for tr in traces])
            previous = torch.cat([tr.weights(kind)[1, 2].diagonal(-1) for tr in traces])
            assert row["same"] == pytest.approx(float(same.sum()) / w.shape[0], abs=1e-6)
            assert row["previous"] == pytest.approx(float(previous.sum()) / w.shape[0], abs=1e-6)
        else:
            assert math.isnan(row["same"]) and math.isnan(row["distance"])
    assert stats.mode == "reference" and stats.sentences == 3


def test_greedy_maps_are_the_models_own_output(reverse_lm):
    stats = corpus_statistics(reverse_lm, STRINGS[:2])
    outputs = reverse_lm.translate(STRINGS[:2])
    direct = corpus_statistics(reverse_lm, STRINGS[:2], outputs)
    torch.testing.assert_close(torch.tensor(stats.frame["entropy"].values),
                               torch.tensor(direct.frame["entropy"].values))
    assert stats.mode == "greedy"


def test_js_divergence_is_zero_on_the_diagonal_and_clusters_identical_heads(reverse_lm):
    stats = corpus_statistics(reverse_lm, STRINGS, STRINGS)
    js = stats.js["encoder_self"]
    assert js.shape == (8, 8) and torch.allclose(js, js.T) and float(js.diagonal().abs().max()) < 1e-6
    assert float(js.max()) <= math.log(2) + 1e-6
    distance = torch.tensor([[0, 1, 5, 5], [1, 0, 5, 5], [5, 5, 0, 2], [5, 5, 2, 0]], dtype=torch.float)
    order = average_linkage_order(distance)
    assert {frozenset(order[:2]), frozenset(order[2:])} == {frozenset({0, 1}), frozenset({2, 3})}


def test_an_encoder_only_model_over_a_corpus(tmp_path):
    adapter = open_model(str(build_masked("bert", tmp_path / "bert")))
    stats = corpus_statistics(adapter, ["a man sees the dog .", "two women walk , talking ."])
    assert set(stats.frame["kind"]) == {"encoder_self"} and stats.mode == "masked"
    trace = adapter.tokenize_source("a man sees the dog .")
    assert trace.tokens[0] == "[CLS]"
    assert (stats.frame["special"] > 0).all() and (stats.frame["punctuation"] > 0).all()
    assert is_punctuation(",") and is_punctuation("Ġ.") and not is_punctuation("##s")


def test_the_cli_prints_the_statistics_json(tmp_path, capsys):
    corpus = tmp_path / "c.txt.gz"
    with gzip.open(corpus, "wt", encoding="utf-8") as f:
        f.write("\n".join(STRINGS) + "\n")
    assert main(["heads", "checkpoints/reverse", "--corpus", str(corpus), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sentences"] == 5 and data["mode"] == "greedy" and not data["capped"]
    assert {h["kind"] for h in data["heads"]} == {"encoder_self", "decoder_self", "cross"}
    assert set(data["clusters"]) == {"encoder_self", "decoder_self", "cross"}


BAD = {
    "empty": (b"\n\n  \n", "has no text"),
    "binary": (b"abc\x00\x01\x02", "binary"),
    "not utf-8": (b"caf\xe9 au lait\n", "not UTF-8"),
    "misaligned": (b"a man\tein Mann\nthe dog\n", "mixes lines with and without a tab"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_corpus_file_is_one_clear_line(case, tmp_path, capsys):
    data, message = BAD[case]
    path = tmp_path / "corpus.txt"
    path.write_bytes(data)
    with pytest.raises(CorpusError, match=message):
        read_corpus(path)
    assert main(["heads", "checkpoints/reverse", "--corpus", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_large_corpus_is_capped_and_says_so(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("\n".join(f"line {i}" for i in range(50)) + "\n")
    corpus = read_corpus(path, cap=10)
    assert len(corpus.sources) == 10 and corpus.capped and "the first 10 lines: the cap" in corpus.describe()
    cut = read_corpus(path, max_bytes=30)
    assert cut.capped and all(s.startswith("line ") for s in cut.sources) and len(cut.sources) < 50
    other = tmp_path / "refs.txt"
    other.write_text("one\ntwo\n")
    with pytest.raises(CorpusError, match="not aligned"):
        read_corpus(path, other)


def test_the_shipped_reversal_models_best_aligned_head_is_evals():
    from transformer.analysis import evaluate_alignment
    from transformer.data import known_alignment
    from transformer.store import task_for_checkpoint
    ckpt = load_checkpoint("checkpoints/reverse", load_optimizer=False)
    examples = task_for_checkpoint(ckpt).valid[:300]
    adapter = open_model("checkpoints/reverse")
    stats = corpus_statistics(adapter, [e.source for e in examples], [e.target for e in examples],
                              gold=lambda text: known_alignment("reverse", text, ckpt.src_tokenizer))
    frame, _ = evaluate_alignment(ckpt.model, examples, ckpt.src_tokenizer, ckpt.tgt_tokenizer)
    ours = stats.frame.query("kind == 'cross'").set_index(["layer", "head"])["alignment"]
    theirs = frame[frame["head"] >= 0].set_index(["layer", "head"])["score"]
    # each side's best head is among the other's best within 0.02 (two heads can both saturate near 1.0)
    assert theirs[ours.idxmax()] >= theirs.max() - 0.02 and ours[theirs.idxmax()] >= ours.max() - 0.02
    assert abs(ours.max() - theirs.max()) <= 0.02
    assert stats.frame.query("kind != 'cross'")["alignment"].isna().all()
    greedy = corpus_statistics(adapter, [e.source for e in examples],
                               gold=lambda text: known_alignment("reverse", text, ckpt.src_tokenizer))
    assert abs(greedy.frame.query("kind == 'cross'")["alignment"].max() - theirs.max()) <= 0.02


def test_two_shards_merged_equal_one_process(reverse_lm):
    from transformer.analysis import corpus_sums, merge_sums, stats_from_sums
    texts = [*STRINGS, "abcd", "qrstuvw", "aaaa"]
    whole = corpus_statistics(reverse_lm, texts, js_sentences=5)
    parts = [corpus_sums(reverse_lm, texts, shard=(rank, 2), js_sentences=5) for rank in (0, 1)]
    assert {p.sentences for p in parts} == {4}
    merged = stats_from_sums(merge_sums(parts))
    numbers = [c for c in whole.frame.columns if c not in ("kind",)]
    torch.testing.assert_close(torch.tensor(merged.frame[numbers].values, dtype=torch.float64),
                               torch.tensor(whole.frame[numbers].values, dtype=torch.float64), atol=1e-6, rtol=0,
                               equal_nan=True)
    for kind in whole.js:
        torch.testing.assert_close(merged.js[kind], whole.js[kind], atol=1e-6, rtol=0)
    assert merged.sentences == whole.sentences and merged.js_sentences == whole.js_sentences == 5


@pytest.mark.slow  # starts two processes
def test_torchrun_statistics_equal_one_process(tmp_path, capsys):
    import os
    import subprocess
    import sys
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join([*STRINGS, "abcd", "qrstuvw"]) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    args = ["heads", str(ROOT / "checkpoints" / "reverse"), "--corpus", str(corpus), "--json"]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m",
                          "transformer", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr[-2000:]
    assert main(args) == 0  # the one process: this one (its start is not what the test checks)
    a, b = json.loads(capsys.readouterr().out), json.loads(two.stdout)  # rank 0 prints, the other process nothing
    assert a["sentences"] == b["sentences"] == 7
    for x, y in zip(a["heads"], b["heads"], strict=True):
        assert (x["kind"], x["layer"], x["head"]) == (y["kind"], y["layer"], y["head"])
        for name, value in x.items():
            if isinstance(value, float):
                assert y[name] == pytest.approx(value, abs=1e-6)


def test_examples_are_the_sentences_nearest_and_furthest_from_a_heads_average(reverse_lm):
    texts = [*STRINGS, "abcd", "qrstuvwxyzab"]
    stats = corpus_statistics(reverse_lm, texts, texts)
    most, least = stats.examples("encoder_self", 1, 0, n=2)
    mean = float(stats.frame.query("kind == 'encoder_self' and layer == 1 and head == 0")["entropy"].iloc[0])
    def entropy(text: str) -> float:
        w = teacher_forced(reverse_lm, text, text).trace.weights("encoder_self")[1, 0].float().clamp(min=1e-30)
        return float(-(w * w.log()).sum(-1).mean())

    per = {i: entropy(t) for i, t in enumerate(texts)}
    order = sorted(per, key=lambda i: abs(per[i] - mean))
    assert most == order[:2] and least == order[::-1][:2]
    with pytest.raises(KeyError, match="no head"):
        stats.examples("encoder_self", 5, 0)


def _average_linkage_by_definition(distance: torch.Tensor) -> list[int]:
    """Average linkage read off its definition: every pair of clusters' mean member distance, recomputed at each
    merge, the first closest pair in index order merged (the later one's members appended)."""
    clusters = {i: [i] for i in range(distance.shape[0])}
    d = distance.double()
    while len(clusters) > 1:
        ids = list(clusters)
        pairs = [(float(d[clusters[x]][:, clusters[y]].mean()), i, j)
                 for i, x in enumerate(ids) for j, y in enumerate(ids) if i < j]
        _, i, j = min(pairs)
        clusters[ids[i]] += clusters.pop(ids[j])
    return next(iter(clusters.values()))


@pytest.mark.parametrize("seed", range(12))
def test_the_clustering_order_is_average_linkage_by_its_definition(seed):
    gen = torch.Generator().manual_seed(seed)
    n = 3 + seed * 3
    points = torch.rand(n, 4, generator=gen)
    distance = torch.cdist(points, points)  # no exact ties: which of two equal means comes first could turn on the
    assert average_linkage_order(distance) == _average_linkage_by_definition(distance)  # last bits of a CPU's sums
