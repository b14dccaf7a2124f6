"""The dictionaries shipped in checkpoints/dictionaries/ (built by checkpoints/build.sh): they load, fit their models'
sites, explain >= 0.9 of their activations' variance, and on the induction model the known answer holds: at
induction cells of the induction head, the top feature pair is a query feature that fires on the current token X
and a key feature that fires where the previous token is X (>= 18 of its 20 strongest activations over the task's
streams' positions after the first), the error terms at most 20 % of the score."""
from __future__ import annotations

import random

import pytest
import torch

from tests.helpers import ROOT
from transformer.analysis import capture_path
from transformer.data.induction import INDUCTION_ALPHABET, draw_repeat
from transformer.dictionaries import encoded, feature_qk, load_dictionary, place, site_activations, top_examples
from transformer.model import Head
from transformer.store import open_model

SHIPPED = {"induction-resid-L2": ("checkpoints/induction", "resid:L2"),
           "toy-en-de-enc-out": ("checkpoints/toy-en-de", "resid:enc:out")}
INDUCTION_HEAD = Head("self", 1, 1)  # self:L2H2, the card's known induction head
DIRS = ROOT / "checkpoints" / "dictionaries"


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_shipped_dictionary_fits_its_model_and_explains_its_site(name: str):
    model, site = SHIPPED[name]
    dictionary = load_dictionary(DIRS / name)
    assert dictionary.site.label == site and dictionary.trained
    assert dictionary.metrics["explained_variance"] >= 0.9
    dictionary.check_width(place(dictionary.site, open_model(str(ROOT / model))).width, model)
    assert sum(f.stat().st_size for f in (DIRS / name).iterdir()) <= 600_000


@pytest.mark.slow  # the induction model over 300 streams
def test_at_induction_cells_the_top_pair_is_current_token_x_meets_previous_token_x():
    adapter = open_model(str(ROOT / "checkpoints" / "induction"))
    dictionary = load_dictionary(DIRS / "induction-resid-L2")
    rng = random.Random(7)
    repeats = [draw_repeat(rng, 24, 60, INDUCTION_ALPHABET) for _ in range(300)]
    acts = site_activations(adapter, place(dictionary.site, adapter), [r.text for r in repeats])
    codes = encoded(dictionary, acts)
    ev = 1 - float((dictionary.decode(codes) - acts.values).pow(2).sum() / (acts.values - acts.values.mean(0))
                   .pow(2).sum())
    assert ev >= 0.9
    # a stream's first position has no previous token (the previous-token head can only read the token itself
    # there): the check reads the positions that have one
    codes[torch.tensor(acts.positions) == 0] = 0
    checked = 0
    for r in repeats[:8]:
        i = r.length // 2
        query, key = r.second + i, r.first + i + 1  # the token X at the query; the key right after X's first time
        x = r.text[query]
        ids = torch.tensor([adapter.tokenize_source(r.text).ids])
        table = feature_qk(capture_path(adapter, ids, ids), INDUCTION_HEAD, query, key, [dictionary])
        q_feature, k_feature, contribution = max(table.pairs(), key=lambda p: p[2])
        assert contribution > 0 and table.error_share() <= 0.2, (r.text, query, key)
        q_tops = top_examples(codes, acts, q_feature, 20)
        k_tops = top_examples(codes, acts, k_feature, 20)
        assert sum(e.token == x for e in q_tops) >= 18, (x, [e.token for e in q_tops])
        assert sum(e.previous == x for e in k_tops) >= 18, (x, [e.previous for e in k_tops])
        checked += 1
    assert checked == 8
