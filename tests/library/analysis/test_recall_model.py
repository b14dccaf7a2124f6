"""The shipped recall model (checkpoints/recall): its card names one recall head, the model recalls each value of a
pair seen before and cannot without that head, and the retrieval detector (Wu et al. 2024's needle-in-a-haystack
score) ranks that head first where it was trained (512 tokens) and far past it, at 2k and 8k tokens: its first layer is
local (RoPE, a window), its second global (no positions, log-n scaled), so the lookup does not fade with length."""
from __future__ import annotations

import random
from functools import cache

import pytest
import torch

from tests.helpers import ROOT
from transformer.adapters import adapter_for
from transformer.analysis import long_range_dict, long_range_heads
from transformer.data import END_ID, START_ID
from transformer.data.recall import draw_recall
from transformer.model import Head
from transformer.store import load_checkpoint

RECALL_MODEL = ROOT / "checkpoints" / "recall"
TRAINED = 512  # the longest training streams (tokens)
pytestmark = pytest.mark.skipif(not (RECALL_MODEL / "config.json").exists(), reason="checkpoints/recall not shipped")


@cache
def shipped():
    return load_checkpoint(RECALL_MODEL, load_optimizer=False)


def recall_head() -> Head:
    (label,) = [label for label, role in shipped().known_heads.items() if role == "retrieval"]
    return Head.parse(label)


def recall_accuracy(length: int, head_mask=None, n: int = 8) -> float:
    """Greedy next-token accuracy on the asked symbols (each value symbol of a pair seen before) of fresh streams."""
    ckpt, rng, hit, total = shipped(), random.Random(length), 0, 0
    for _ in range(n):
        r = draw_recall(rng, length, length)
        ids = ckpt.tgt_tokenizer.encode(r.text)
        with torch.no_grad():
            logits, _ = ckpt.model.full(torch.tensor([[END_ID]]), torch.tensor([[START_ID, *ids]]), head_mask=head_mask)
        predicted = logits[0, 1:].argmax(-1)  # the row of input k predicts symbol k of the stream
        hit += sum(int(predicted[i] == ids[i]) for i in r.asked)
        total += len(r.asked)
    return hit / total


def test_the_card_names_its_recall_head_and_the_previous_token_head_it_reads():
    ckpt = shipped()
    assert sorted(ckpt.known_heads.values()) == ["previous-token", "retrieval"]
    assert Head.parse(next(k for k, v in ckpt.known_heads.items() if v == "previous-token")).layer < recall_head().layer
    assert ckpt.card()["known_heads"] == ckpt.known_heads
    cfg = ckpt.model_config
    assert (cfg.positions, cfg.architecture) == ("rope", "decoder-only")
    assert cfg.max_len >= 8192 and cfg.is_local(0) and not cfg.rotates(1) and cfg.logn_length == TRAINED


@pytest.mark.parametrize("length", [192, 2048])
def test_the_model_recalls_each_value_where_trained_and_four_times_as_far(length):
    assert recall_accuracy(length, n=4) >= 0.9


def test_the_model_needs_its_recall_head_to_recall():
    assert recall_accuracy(192) >= 0.9
    cfg = shipped().model_config
    mask = torch.ones(cfg.n_decoder_layers, cfg.n_heads)
    head = recall_head()
    mask[head.layer, head.head] = 0
    assert recall_accuracy(192, {"self": mask}) <= 0.3


def _ranked(length: int) -> dict:
    ckpt = shipped()
    adapter = adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name="recall")
    found = long_range_heads(adapter, length)
    out = long_range_dict(found)["retrieval"]
    assert found.length == length and out["lengths"] == [length // 2, length]
    return out


def test_the_retrieval_detector_ranks_the_recall_head_first_where_it_was_trained():
    out = _ranked(TRAINED)
    assert out["best"]["label"] == recall_head().label and out["best"]["score"] >= 0.5
    assert max(h["retrieval"] for h in out["heads"] if h["label"] != recall_head().label) == 0


@pytest.mark.slow
@pytest.mark.parametrize("length", [2048, 8192])
def test_the_retrieval_detector_ranks_the_recall_head_first_at_2k_and_8k(length):
    out = _ranked(length)
    assert out["best"]["label"] == recall_head().label and out["best"]["score"] >= 0.9 and out["copy_rate"] >= 0.9
    assert max(h["retrieval"] for h in out["heads"] if h["label"] != recall_head().label) == 0



def test_a_decode_stops_at_the_answer_length_unless_told_otherwise(tmp_path, capsys):
    """A recall stream decoded as the CLI, the notebook and the app decode it by default gives RECALL_VALUE tokens
    (the task's answer: a key's value), not twice the stream's length of filler no model can predict; another
    task's model keeps its own default (the reverse model stops at its end token); the CLI's `--max-steps` still
    decodes as far as asked."""
    import json

    from transformer.cli import main
    from transformer.data.recall import RECALL_VALUE
    from transformer.decode import greedy_decode
    from transformer.store import open_model

    stream = draw_recall(random.Random(3), 150, 150).text
    assert len(greedy_decode(open_model(str(RECALL_MODEL)), stream).steps) == RECALL_VALUE
    reverse = greedy_decode(open_model(str(ROOT / "checkpoints" / "reverse")), "abcdefgh")
    assert reverse.finished and len(reverse.steps) > RECALL_VALUE  # to its end token, past three
    trace = tmp_path / "t.json"
    assert main(["decode", str(RECALL_MODEL), stream, "--max-steps", "9", "--trace-json", str(trace)]) == 0
    capsys.readouterr()
    assert len(json.loads(trace.read_text())["steps"]) == 9
