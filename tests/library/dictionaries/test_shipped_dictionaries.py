"""The dictionaries shipped in checkpoints/dictionaries/ (built by checkpoints/build.sh): they load, fit their models'
sites and explain >= 0.9 of their activations' variance; the induction one gives the known answer at induction
cells."""
from __future__ import annotations

import pytest

from tests.helpers import ROOT
from tests.helpers.induction_features import fresh_streams, induction_cells, stream_activations
from transformer.dictionaries import load_dictionary, place
from transformer.store import open_model

SHIPPED = {"induction-resid-L2": ("checkpoints/induction", "resid:L2"),
           "toy-en-de-enc-out": ("checkpoints/toy-en-de", "resid:enc:out")}
DIRS = ROOT / "checkpoints" / "dictionaries"


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_shipped_dictionary_fits_its_model_and_explains_its_site(name: str):
    model, site = SHIPPED[name]
    dictionary = load_dictionary(DIRS / name)
    assert dictionary.site.label == site and dictionary.trained
    assert dictionary.metrics["explained_variance"] >= 0.9
    dictionary.check_width(place(dictionary.site, open_model(str(ROOT / model))).width, model)
    assert sum(f.stat().st_size for f in (DIRS / name).iterdir()) <= 600_000


def test_at_induction_cells_the_top_pair_is_the_current_token_meeting_the_previous_token():
    # the known answer (docs/dictionaries.md): at 12 induction cells of self:L2H2 (fresh streams of the task's
    # generator, seed 51; the query a token X inside the repeat, the key right after X's earlier occurrence, where
    # the head looks), the top pair's query feature fires on X and its key feature right after X in >= 18 of their
    # 20 strongest activations over 300 other fresh streams; the error terms are a small share of a typical score
    adapter = open_model(str(ROOT / "checkpoints/induction"))
    dictionary = load_dictionary(DIRS / "induction-resid-L2")
    acts, codes = stream_activations(adapter, dictionary, fresh_streams(1234, 300))
    cells = induction_cells(adapter, dictionary, 51, 12, acts, codes)
    assert len({c.token for c in cells}) >= 8
    for cell in cells:
        assert cell.query_on_x >= 18 and cell.key_after_x >= 18, cell
    assert sorted(c.error_share for c in cells)[len(cells) // 2] <= 0.2
