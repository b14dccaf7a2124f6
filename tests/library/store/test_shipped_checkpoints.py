"""The demo checkpoints shipped in checkpoints/ load and reach their figures on held-out data."""
import json
import re
from functools import cache
from pathlib import Path

import pytest

from tests.helpers import ROOT
from transformer.data import TaskSpec
from transformer.store import list_checkpoints, load_checkpoint, task_for_checkpoint
from transformer.train import evaluate_model

ROOT = ROOT / "checkpoints"
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
    from transformer.adapters import adapter_for
    from transformer.decode import greedy_decode

    ckpt = multi30k()
    out = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text).output_text
    assert out[0].isupper() and words <= set(out.replace(".", " ").split()), out


@pytest.mark.slow  # a real process or a full evaluation
@pytest.mark.skipif(not M30K_DATA.is_dir(), reason="the Multi30k corpus is not at ../shared/data/multi30k")
def test_the_multi30k_model_reaches_its_validation_bleu():
    from transformer.adapters import decode_texts
    from transformer.analysis import corpus_scores
    from transformer.data import read_aligned_files

    ckpt = multi30k()
    pairs = read_aligned_files(M30K_DATA / "val.en.gz", M30K_DATA / "val.de.gz", max_pairs=200)
    outputs = decode_texts(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, [s for s, _ in pairs])
    assert corpus_scores(outputs, [t for _, t in pairs])["bleu"] >= M30K_MIN_BLEU


# -- portable: no shipped file names a path of the machine that built it -----------------------------------------
ABSOLUTE_PATH = re.compile(r"^(?:/|~/|[A-Za-z]:[\\/])[^/\\\s]+[/\\]")  # /home/x/..., ~/x/..., C:\x\...
ABSOLUTE_IN_TEXT = re.compile(r"(?:^|[\s\"'=(])(?:/(?:home|work|tmp|root|Users|mnt|srv|opt|var|data)/|~/|[A-Za-z]:\\)")


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _absolute_paths(path: Path) -> list[str]:
    raw = path.read_bytes()
    if path.suffix == ".safetensors":  # an 8-byte header length, then the JSON header (names, shapes, metadata)
        return [s for s in _strings(json.loads(raw[8: 8 + int.from_bytes(raw[:8], "little")]))
                if ABSOLUTE_PATH.match(s)]
    if path.suffix == ".json":
        return [s for s in _strings(json.loads(raw)) if ABSOLUTE_PATH.match(s)]
    return ABSOLUTE_IN_TEXT.findall(raw.decode("utf-8"))


@pytest.mark.parametrize("path", sorted(p for p in ROOT.rglob("*") if p.is_file()),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_shipped_file_names_an_absolute_path(path: Path):
    assert _absolute_paths(path) == []


def test_the_check_finds_an_absolute_path(tmp_path: Path):
    (tmp_path / "config.json").write_text(json.dumps({"task_spec": {"data": ["/work/shared/data/train.en.gz"]}}))
    (tmp_path / "build.sh").write_text("train --data /home/someone/corpus.tsv\n")
    assert _absolute_paths(tmp_path / "config.json") and _absolute_paths(tmp_path / "build.sh")


def test_the_multi30k_spec_finds_its_data_beside_the_repository():
    spec = TaskSpec.from_dict(multi30k().task_spec)
    expected = (ROOT.parents[1] / "shared" / "data" / "multi30k").resolve()  # `../shared` may be a link
    assert [Path(p).resolve() for p in spec.data] == [expected / "train.en.gz", expected / "train.de.gz"]
    assert [Path(p).resolve() for p in spec.valid_data] == [expected / "val.en.gz", expected / "val.de.gz"]
