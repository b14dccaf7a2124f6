"""The demo checkpoints shipped in checkpoints/ load and reach their figures on held-out data."""
from functools import cache
from pathlib import Path

import pytest

from transformer.store import list_checkpoints, load_checkpoint, task_for_checkpoint
from transformer.train import evaluate_model

ROOT = Path(__file__).resolve().parent.parent / "checkpoints"
TARGETS = {"reverse": 0.99, "sort": 0.99, "toy-en-de": 0.95}
MAX_BYTES = 5 * 2**20
HELD_OUT = 300


@cache
def held_out_metrics(name: str) -> dict:
    """Metrics of a shipped checkpoint on validation examples that never appear in its training data."""
    ckpt = load_checkpoint(ROOT / name, load_optimizer=False)
    task = task_for_checkpoint(ckpt)
    train_sources = {e.source for e in task.train}
    task.valid = [e for e in task.valid if e.source not in train_sources][:HELD_OUT]
    assert len(task.valid) == HELD_OUT
    return evaluate_model(ckpt.model, task, n=HELD_OUT)


def test_all_three_demo_checkpoints_are_shipped_and_small():
    assert {p.name for p in list_checkpoints(ROOT)} >= set(TARGETS)
    for name in TARGETS:
        size = sum(f.stat().st_size for f in (ROOT / name).iterdir())
        assert size <= MAX_BYTES, f"{name} is {size / 2**20:.1f} MiB"


@pytest.mark.slow  # a real process or a full evaluation
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_shipped_checkpoint_reaches_its_exact_match_on_held_out_data(name):
    assert held_out_metrics(name)["exact_match"] >= TARGETS[name]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_shipped_checkpoint_has_a_cross_attention_head_aligned_with_the_gold_alignment(name):
    assert held_out_metrics(name)["alignment"]["best"] >= 0.9


# -- the real-corpus model: multi30k-en-de (joint BPE, tied embeddings, fp16 weights on disk) ------------------
M30K = ROOT / "multi30k-en-de"
M30K_DATA = next((p for p in (ROOT.parents[1] / "shared" / "data" / "multi30k", Path("/work/shared/data/multi30k"))
                  if p.is_dir()), ROOT / "absent")
M30K_MAX_BYTES = 25 * 2**20
M30K_MIN_BLEU = 33.0  # the target for the shipped model (greedy, first 200 validation sentences)


@cache
def multi30k():
    return load_checkpoint(M30K, load_optimizer=False)


def test_the_multi30k_model_is_listed_small_and_upcast_on_load():
    assert M30K in list_checkpoints(ROOT)
    assert sum(f.stat().st_size for f in M30K.iterdir()) <= M30K_MAX_BYTES
    ckpt = multi30k()
    assert ckpt.src_tokenizer.kind == "bpe" and ckpt.model_config.tie_embeddings
    assert all(p.dtype.itemsize == 4 for p in ckpt.model.parameters())
    assert len(ckpt.metrics.get("examples") or []) >= 3  # the picker offers validation sentences to try


@pytest.mark.parametrize("text, words", [("A man is riding a bicycle.", {"Mann", "Fahrrad"}),
                                          ("Two dogs are playing in the snow.", {"Hunde", "Schnee"})])
def test_the_multi30k_model_translates_a_new_simple_sentence(text, words):
    from transformer.decode import greedy_decode

    ckpt = multi30k()
    out = greedy_decode(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, text).output_text
    assert out[0].isupper() and words <= set(out.replace(".", " ").split()), out


@pytest.mark.slow  # a real process or a full evaluation
@pytest.mark.skipif(not M30K_DATA.is_dir(), reason="the Multi30k corpus is not at ../shared/data/multi30k")
def test_the_multi30k_model_reaches_its_validation_bleu():
    from transformer.analysis import corpus_scores
    from transformer.data import read_aligned_files
    from transformer.decode import decode_texts

    ckpt = multi30k()
    pairs = read_aligned_files(M30K_DATA / "val.en.gz", M30K_DATA / "val.de.gz", max_pairs=200)
    outputs = decode_texts(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, [s for s, _ in pairs])
    assert corpus_scores(outputs, [t for _, t in pairs])["bleu"] >= M30K_MIN_BLEU
