"""The shipped induction model (checkpoints/induction): the heads its card names are the ones the detectors pick, and
the model completes a repeat from its earlier occurrence, which it cannot do without its previous-token head."""
from __future__ import annotations

import random
from functools import cache

import torch

from tests.helpers import ROOT
from transformer.adapters import adapter_for
from transformer.analysis import INDUCTION, PREVIOUS_TOKEN, detect_heads
from transformer.data import END_ID, START_ID
from transformer.data.induction import INDUCTION_ALPHABET, draw_repeat
from transformer.model import Head
from transformer.store import load_checkpoint

INDUCTION_MODEL = ROOT / "checkpoints" / "induction"


@cache
def shipped():
    return load_checkpoint(INDUCTION_MODEL, load_optimizer=False)


def _role(role: str) -> Head:
    (label,) = [label for label, r in shipped().known_heads.items() if r == role]
    return Head.parse(label)


def repeat_accuracy(head_mask=None, n: int = 60) -> float:
    """Greedy next-token accuracy inside the repeat (after its first token) of `n` fresh sequences."""
    ckpt, rng, hit, total = shipped(), random.Random(123), 0, 0
    for _ in range(n):
        r = draw_repeat(rng, 24, 60, INDUCTION_ALPHABET)
        ids = ckpt.tgt_tokenizer.encode(r.text)
        with torch.no_grad():
            logits, _ = ckpt.model.full(torch.tensor([[END_ID]]), torch.tensor([[START_ID, *ids]]), head_mask=head_mask)
        predicted = logits[0, 1:].argmax(-1)  # the row of input k predicts token k of the sequence
        for k in range(r.second + 1, r.second + r.length):
            hit += int(predicted[k] == ids[k])
            total += 1
    return hit / total


def test_the_card_names_the_heads_the_detectors_pick():
    ckpt = shipped()
    assert sorted(ckpt.known_heads.values()) == [INDUCTION, PREVIOUS_TOKEN]
    assert ckpt.card()["known_heads"] == ckpt.known_heads
    found = detect_heads(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name="induction"))
    heads = found.frame[found.frame["head"] >= 0]
    for column, role in (("previous_token", PREVIOUS_TOKEN), ("induction", INDUCTION)):
        top = heads.loc[heads[column].idxmax()]
        assert Head(found.kind, int(top["layer"]), int(top["head"])) == _role(role), column
    assert _role(PREVIOUS_TOKEN).layer < _role(INDUCTION).layer  # the induction head reads what the other wrote
    top_induction = heads["induction"].nlargest(2).tolist()
    assert top_induction[0] > 3 * top_induction[1]


def test_the_model_completes_a_repeat_and_needs_its_previous_token_head_to():
    assert repeat_accuracy() >= 0.95
    cfg = shipped().model_config
    mask = torch.ones(cfg.n_decoder_layers, cfg.n_heads)
    head = _role(PREVIOUS_TOKEN)
    mask[head.layer, head.head] = 0
    assert repeat_accuracy({"self": mask}) <= 0.5
