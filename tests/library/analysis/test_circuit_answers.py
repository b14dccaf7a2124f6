"""Known answers on the shipped models, from generated task pairs averaged over a batch: the induction model's
previous-token → induction key edge, the reversal model's aligned cross-attention head, the recall model's recall
head reading the asked key with its query, and an IOI-style names template on the induction model."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from transformer.analysis.circuits import find_circuit
from transformer.analysis.circuits.pairs import NAMES, edit_pairs, induction_pairs, names_pairs, recall_pairs
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


def test_a_names_template_on_the_induction_model_finds_the_indirect_object_by_its_induction_circuit():
    """"When B A went B": the name after B's first mention is A (the indirect object), which the induction model copies
    by its previous-token → induction key edge; four pairs (names of two lengths aligned), the scores and metrics their
    average."""
    adapter = open_model(str(CHECKPOINTS / "induction"))
    template = "When{b}{a}went{b}"
    pairs = names_pairs(adapter, 4, template=template, continuation=True)
    assert len(pairs) == 4 and any(p.aligned for p in pairs)
    copied = 0
    for pair in pairs:
        text = "".join(adapter.ids_to_tokens(pair.clean.tgt[0].tolist())).removeprefix("<s>")
        a = next(a for a in NAMES for b in NAMES if template.format(a=a, b=b) == text)
        copied += adapter.id_to_token(pair.answer) == a[0]
    assert copied >= 3  # the model answers the indirect object's first letter in most pairs
    result = find_circuit(pairs)
    own = [pair.clean.cap.insides.logits[0, pair.position] for pair in pairs]  # the model's own logits
    mean = torch.stack([lg[p.answer] - lg[p.contrast] for lg, p in zip(own, pairs, strict=True)]).mean()
    assert result.n_pairs == 4 and result.clean_metric == pytest.approx(float(mean), abs=1e-4) and mean > 0
    keys = [e for e in result.ranked() if e.target == "self:L2H2" and e.input == "k"]
    assert keys[0].source == "self:L1H2" and keys[0].score > 0
    assert result.faithfulness.reached and {"self:L1H2", "self:L2H2"} <= result.heads()
