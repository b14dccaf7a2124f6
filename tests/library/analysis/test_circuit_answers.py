"""Known answers on the shipped models, from generated task pairs averaged over a batch: the induction model's
previous-token → induction key edge, the reversal model's aligned cross-attention head, the recall model's recall
head reading the asked key with its query."""
from __future__ import annotations

from pathlib import Path

import pytest

from transformer.analysis.circuits import find_circuit
from transformer.analysis.circuits.pairs import edit_pairs, induction_pairs, recall_pairs
from transformer.store import open_model

pytestmark = pytest.mark.slow
CHECKPOINTS = Path(__file__).resolve().parents[3] / "checkpoints"


def test_the_previous_token_head_feeds_the_induction_heads_keys_first():
    adapter = open_model(str(CHECKPOINTS / "induction"))
    result = find_circuit(induction_pairs(adapter, 4))
    keys = [e for e in result.ranked() if e.target == "self:L2H2" and e.input == "k"]
    assert keys[0].source == "self:L1H2" and keys[0].score > 0
    assert result.faithfulness.reached and {"self:L1H2", "self:L2H2"} <= result.heads()


def test_the_reversal_models_aligned_cross_head_is_in_its_circuit():
    adapter = open_model(str(CHECKPOINTS / "reverse"))
    result = find_circuit(edit_pairs(adapter, 4))
    assert result.faithfulness.reached and "cross:L1H4" in result.heads()


def test_the_recall_heads_query_reads_the_asked_key():
    adapter = open_model(str(CHECKPOINTS / "recall"))
    result = find_circuit(recall_pairs(adapter, 4))
    top = result.ranked()[0]
    assert (top.source, top.target, top.input) == ("dec:emb", "self:L2H1", "q") and top.score > 0
    assert result.faithfulness.reached and "self:L2H1" in result.heads()
