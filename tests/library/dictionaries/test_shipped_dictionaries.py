"""The dictionaries shipped in checkpoints/dictionaries/ (built by checkpoints/build.sh): they load, fit their models'
sites and explain >= 0.9 of their activations' variance."""
from __future__ import annotations

import pytest

from tests.helpers import ROOT
from transformer.dictionaries import load_dictionary, place
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
