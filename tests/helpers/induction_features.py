"""The induction model's known answer in dictionary features, measured: at induction cells of its induction head the
top (query feature, key feature) pair, and where each feature's strongest activations sit over fresh streams of
its task (the query feature's on the current token X, the key feature's right after X)."""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from transformer.adapters import InspectableModel
from transformer.analysis import capture_path
from transformer.data.induction import INDUCTION_ALPHABET, INDUCTION_MAX_LEN, INDUCTION_MIN_LEN, draw_repeat
from transformer.dictionaries import Dictionary, encoded, place, site_activations, top_examples
from transformer.dictionaries.activations import Activations
from transformer.model import Head

INDUCTION_HEAD = Head("self", 1, 1)  # self:L2H2, the card's known induction head


@dataclass(frozen=True)
class Cell:
    """One induction cell's answer: the current token X, the top pair, how many of each feature's 20 strongest
    activations sit on X (query) and right after X (key), and the error terms' share of the score."""

    token: str
    query_feature: int
    key_feature: int
    query_on_x: int
    key_after_x: int
    error_share: float
    score: float


def fresh_streams(seed: int, n: int) -> list[str]:
    """`n` streams of the induction task drawn from their generator with `seed` (not the training seed's)."""
    rng = random.Random(seed)
    return [draw_repeat(rng, INDUCTION_MIN_LEN, INDUCTION_MAX_LEN, INDUCTION_ALPHABET).text for _ in range(n)]


def stream_activations(adapter: InspectableModel, dictionary: Dictionary, streams: list[str]
                       ) -> tuple[Activations, torch.Tensor]:
    """The dictionary's site over `streams`, and every row's feature activations with each stream's first position
    zeroed (it has no previous token)."""
    acts = site_activations(adapter, place(dictionary.site, adapter), streams)
    codes = encoded(dictionary, acts)
    codes[torch.tensor(acts.positions) == 0] = 0
    return acts, codes


def induction_cells(adapter: InspectableModel, dictionary: Dictionary, seed: int, n_cells: int,
                    acts: Activations, codes: torch.Tensor, n_top: int = 20) -> list[Cell]:
    """`n_cells` induction cells, one per fresh stream (seeded): the query a random token X inside the repeat (its
    second occurrence), the key right after X's first occurrence, where the induction head looks (its row's largest
    weight; a cell where the model does not do induction is drawn again)."""
    from transformer.dictionaries import feature_qk

    rng = random.Random(seed)
    cells = []
    while len(cells) < n_cells:
        r = draw_repeat(rng, INDUCTION_MIN_LEN, INDUCTION_MAX_LEN, INDUCTION_ALPHABET)
        offset = rng.randrange(r.length - 1)
        query, key = r.second + offset, r.first + offset + 1
        ids = torch.tensor([adapter.tokenize_source(r.text).ids])
        cap = capture_path(adapter, ids, ids)
        kind, layer, head = INDUCTION_HEAD
        if int(cap.insides.attentions.by_kind[kind][layer][0, head, query].argmax()) != key:
            continue
        table = feature_qk(cap, INDUCTION_HEAD, query, key, [dictionary])
        q, k, _ = max(table.pairs(), key=lambda p: p[2])
        x = r.text[query]
        on_x = sum(e.token == x for e in top_examples(codes, acts, q, n_top))
        after_x = sum(e.previous == x for e in top_examples(codes, acts, k, n_top))
        cells.append(Cell(x, q, k, on_x, after_x, table.error_share(), table.score))
    return cells
