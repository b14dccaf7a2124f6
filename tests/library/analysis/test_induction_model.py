"""The shipped induction model (checkpoints/induction): the heads its card names are the ones the detectors pick, the
model completes a repeat from its earlier occurrence, which it cannot do without its previous-token head, and the
induction head reads that head's output (K-composition and the key side of an induction cell's QK table)."""
from __future__ import annotations

import random
from functools import cache

import torch

from tests.helpers import ROOT
from transformer.adapters import adapter_for
from transformer.analysis import (
    INDUCTION,
    PREVIOUS_TOKEN,
    capture_path,
    composition_scores,
    detect_heads,
    qk_attribution,
)
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
    top_previous = heads["previous_token"].nlargest(2).tolist()
    assert top_previous[0] > 3 * top_previous[1]  # one clear previous-token head
    assert heads["induction"].max() >= 0.9


def test_the_model_completes_a_repeat_and_needs_its_previous_token_head_to():
    assert repeat_accuracy() >= 0.95
    cfg = shipped().model_config
    mask = torch.ones(cfg.n_decoder_layers, cfg.n_heads)
    head = _role(PREVIOUS_TOKEN)
    mask[head.layer, head.head] = 0
    assert repeat_accuracy({"self": mask}) <= 0.5


def test_the_induction_heads_strongest_k_composition_partner_is_the_previous_token_head():
    ckpt = shipped()
    frame = composition_scores(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name="induction"))
    into = frame[frame["to"] == _role(INDUCTION).label]
    assert into.loc[into["k"].idxmax(), "from"] == _role(PREVIOUS_TOKEN).label


def test_an_induction_cells_largest_key_part_is_the_previous_token_heads_output():
    ckpt, rng = shipped(), random.Random(7)
    lm = adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name="induction")
    induction, previous = _role(INDUCTION), _role(PREVIOUS_TOKEN).label
    for _ in range(3):
        r = draw_repeat(rng, 24, 60, INDUCTION_ALPHABET)
        ids = ckpt.tgt_tokenizer.encode(r.text)
        cap = capture_path(lm, torch.tensor([[END_ID]]), torch.tensor([[START_ID, *ids]]))
        for k in range(r.second, r.second + r.length - 1):  # token k of the second copy sits at position k + 1
            query, key = k + 1, k - (r.second - r.first) + 2  # the key: right after its token's earlier occurrence
            table = qk_attribution(cap, induction, query, key)
            by_key = table.by_key_part()
            assert max(by_key, key=lambda part: by_key[part]) == previous, (query, key)
