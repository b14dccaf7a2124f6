"""Pattern labels and the long-range detectors: hand-built maps of each pattern get their label; on the shipped
reversal model the best cross-attention head (its card's) is anti-diagonal; the retrieval score counts only copy
events, and every head of every kind gets a label (retrieval and induction only for causal self-attention)."""
from __future__ import annotations

import math

import pytest
import torch

from tests.helpers import ROOT
from transformer.adapters import adapter_for
from transformer.analysis import label_of, long_range_dict, long_range_heads, pattern_scores, window_induction
from transformer.data import build_char_tokenizer
from transformer.model import ModelConfig, build_model
from transformer.store import load_checkpoint, open_model

T = 40


def _labels(w, tokens, same_axis=True, induction=None):
    scores = pattern_scores(w, tokens, tokens if same_axis else [f"k{i}" for i in range(w.shape[-1])],
                            same_axis=same_axis)
    if induction is not None:
        scores["induction"] = induction
    names = {"sink": "sink", "previous": "previous", "local": "local", "vertical": "vertical",
             "diagonal": "diagonal", "anti_diagonal": "anti_diagonal", "induction": "induction"}
    return [label_of({names[k]: float(v[0, h]) for k, v in scores.items() if k in names})
            for h in range(w.shape[1])]


def test_hand_built_causal_maps_get_their_pattern():
    tokens = ["<s>", *(f"t{i}" for i in range(T - 1))]
    n, start = (T - 1) // 2, 1  # <s> r r
    w = torch.zeros(1, 6, T, T)
    q = torch.arange(T)
    w[0, 0, q[1:], q[1:] - 1] = 1.0  # previous token
    w[0, 0, 0, 0] = 1.0
    w[0, 1] = w[0, 0]
    w[0, 1, start + n + torch.arange(n - 1), start + torch.arange(n - 1) + 1] = 1.0  # induction on the second copy
    w[0, 1, start + n + torch.arange(n - 1), start + n + torch.arange(n - 1) - 1] = 0.0
    w[0, 2, :, 0] = 1.0  # everything on the first token
    gen = torch.Generator().manual_seed(0)
    for row in range(T):  # local: random weights over the last four keys (the peak wanders)
        keys = torch.arange(max(0, row - 3), row + 1)
        spread = torch.rand(len(keys), generator=gen) + 0.5
        w[0, 3, row, keys] = spread / spread.sum()
        w[0, 4, row, torch.tensor([0, 5, 9]) if row >= 9 else keys] = 1.0 / (3 if row >= 9 else len(keys))
        w[0, 5, row, row] = 1.0  # itself: the diagonal of offset 0
    w[0, 4, 9:, 0] = 0.1
    w[0, 4, 9:, 5] = w[0, 4, 9:, 9] = 0.45  # vertical: keys 5 and 9 for every query
    induction = window_induction(w, start, n)
    assert induction[0, 1] == pytest.approx(1.0) and induction[0, 0] == 0
    assert _labels(w, tokens, induction=induction) == ["previous-token", "induction", "first-token sink", "local",
                                                       "vertical", "diagonal"]


def test_hand_built_cross_maps_are_anti_diagonal_or_diagonal():
    w = torch.zeros(1, 2, 12, 10)
    q = torch.arange(10)
    w[0, 0, q, 9 - q] = 1.0  # reversal: q + k = 9
    w[0, 0, 10:, 0] = 1.0
    w[0, 1, q, q] = 1.0  # copy
    w[0, 1, 10:, 9] = 1.0
    assert _labels(w, [f"q{i}" for i in range(12)], same_axis=False) == ["anti-diagonal", "diagonal"]
    scores = pattern_scores(w, [f"q{i}" for i in range(12)], [f"k{i}" for i in range(10)], same_axis=False)
    assert scores["anti_diagonal_sum"][0, 0] == 9 and scores["diagonal_offset"][0, 1] == 0
    assert math.isnan(float(scores["previous"][0, 0])) and math.isnan(float(scores["local"][0, 0]))


def test_the_shipped_reversal_models_best_cross_head_is_anti_diagonal():
    folder = ROOT / "checkpoints" / "reverse"
    best = load_checkpoint(folder, load_optimizer=False).metrics["alignment"]["best_head"]  # "L1H4"
    found = long_range_heads(open_model(folder))
    row = found.frame.query(f"label == 'cross:{best}'").iloc[0]
    assert row["pattern"] == "anti-diagonal" and row["anti_diagonal"] >= 0.5
    assert set(found.frame["kind"]) == {"encoder_self", "decoder_self", "cross"}
    assert found.frame.query("kind != 'decoder_self'")[["retrieval", "induction"]].isna().all().all()


def test_retrieval_counts_only_copy_events_and_the_json_extends_detectors():
    tok = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")
    cfg = ModelConfig(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=32, n_heads=4,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=96, architecture="decoder-only")
    torch.manual_seed(0)
    adapter = adapter_for(build_model(cfg).eval(), tok, tok, name="tiny")
    found = long_range_heads(adapter, length=64)
    assert len(found.frame) == 8 and set(found.frame["kind"]) == {"self"}
    assert found.frame["retrieval"].between(0, found.retrieval["copy_rate"]).all()  # no copy, no copy event
    assert found.retrieval["lengths"] == [32, 64] and len(found.retrieval["depths"]) == 4
    out = long_range_dict(found)
    assert {h["label"] for h in out["pattern"]["heads"]} == {f"self:L{la}H{h}" for la in (1, 2) for h in range(1, 5)}
    assert out["retrieval"]["best"]["label"].startswith("self:")


INDUCTION = ROOT / "checkpoints" / "induction"


def _named_heads(card) -> dict[str, str]:
    """The {head label: role} its card names (a mapping of labels to previous-token / induction anywhere in it)."""
    if isinstance(card, dict):
        if card and all(isinstance(v, str) and v in ("previous-token", "induction") for v in card.values()):
            return dict(card)
        for value in card.values():
            if found := _named_heads(value):
                return found
    if isinstance(card, list):
        for value in card:
            if found := _named_heads(value):
                return found
    return {}


@pytest.mark.skipif(not (INDUCTION / "config.json").exists(), reason="checkpoints/induction is not shipped yet")
def test_the_shipped_induction_models_named_heads_get_their_label():
    import json
    named = _named_heads(json.loads((INDUCTION / "config.json").read_text()))
    assert set(named.values()) == {"previous-token", "induction"}
    found = long_range_heads(open_model(INDUCTION)).frame.set_index("label")
    for label, role in named.items():
        assert found.loc[label, "pattern"] == role, (label, found.loc[label].to_dict())
