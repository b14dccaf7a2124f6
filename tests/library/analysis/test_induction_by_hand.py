"""A Hugging Face GPT-2 with a previous-token head and an induction head set by hand (Olsson et al. 2022's circuit):
the induction head's strongest K-composition partner is the previous-token head, and in the QK table of an induction
cell (query in the second copy, key right after the earlier occurrence of its token) the largest key-side part is the
previous-token head's output."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import build
from transformer.analysis import capture_path, composition_scores, qk_attribution
from transformer.model import Head
from transformer.store import open_model

D, DH, T = 64, 32, 16  # width, head width, positions used; subspaces: tokens 0-15, positions 16-31, previous 32-47
TOKENS = [3, 7, 1, 9, 4, 12, 5]
SEQUENCE = TOKENS + TOKENS  # random tokens repeated: an induction head looks from the second copy to the first


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    folder = build("gpt2", tmp_path_factory.mktemp("gpt2") / "gpt2",
                   size={"d_model": D, "layers": 2, "heads": 2, "kv_heads": 2, "ffn": 64, "positions": 64})
    model = open_model(str(folder))
    gen = torch.Generator().manual_seed(0)
    base = model.network.transformer
    with torch.no_grad():
        for p in model.network.parameters():
            p.zero_()
        for norm in (base.ln_f, *(n for b in base.h for n in (b.ln_1, b.ln_2))):
            norm.weight.fill_(1.0)
        eye = torch.eye(T)
        base.wte.weight[:T, :T] = eye  # token t: direction t
        base.wpe.weight[:T, T:2 * T] = eye  # position p: direction 16 + p
        first, second = base.h[0].attn, base.h[1].attn
        q, k, v = slice(0, T), slice(D, D + T), slice(2 * D, 2 * D + T)  # head 1's columns of c_attn (Conv1D)
        # layer 1, head 1: the previous-token head (position i's query meets position i - 1's key), copying the token
        first.c_attn.weight[T:2 * T, q] = 3 * eye
        first.c_attn.weight[T:2 * T - 1, D + 1:D + T] = 3 * eye[: T - 1, : T - 1]  # key of j at head dim j + 1
        first.c_attn.weight[:T, v] = eye
        first.c_proj.weight[:T, 2 * T:3 * T] = eye  # writes the previous token into directions 32-47
        # layer 2, head 1: the induction head (query: my token; key: the token before you)
        second.c_attn.weight[:T, q] = 3 * eye
        second.c_attn.weight[2 * T:3 * T, k] = 3 * eye
        second.c_attn.weight[:T, v] = eye
        second.c_proj.weight[:T, 3 * T:4 * T] = eye
        for attn in (first, second):  # head 2 of each layer: random, a competitor
            for start in (DH, D + DH, 2 * D + DH):
                attn.c_attn.weight[:, start:start + DH] = torch.randn(D, DH, generator=gen) * 0.05
            attn.c_proj.weight[DH:] = torch.randn(DH, D, generator=gen) * 0.05
    return model


def test_the_induction_heads_strongest_k_composition_partner_is_the_previous_token_head(adapter):
    frame = composition_scores(adapter)
    into = frame[frame["to"] == "self:L2H1"]
    assert into.loc[into["k"].idxmax(), "from"] == "self:L1H1"


def test_an_induction_cells_largest_key_part_is_the_previous_token_heads_output(adapter):
    ids = torch.tensor([SEQUENCE])
    cap = capture_path(adapter, ids, ids)
    pattern = cap.insides.attentions["self"]
    n = len(TOKENS)
    for query in range(n + 1, 2 * n):  # the second copy: it looks right after its token's earlier occurrence
        key = query - n + 1
        assert int(pattern[1][0, 0, query].argmax()) == key  # the hand-set heads work
        assert int(pattern[0][0, 0, query].argmax()) == query - 1
        table = qk_attribution(cap, Head("self", 1, 0), query, key)
        by_key = table.by_key_part()
        assert max(by_key, key=lambda part: by_key[part]) == "self:L1H1"
        assert abs(table.total - table.score) <= 1e-4 * max(1.0, abs(table.score))
