"""Training a dictionary (dictionaries.train_dictionary), tiny: on activations made of a few sparse directions it
reaches a high explained variance with unit-norm decoder rows; its report is the one `evaluate` gives; progress
comes to the callback and Cancel stops it with the result kept; settings that cannot train are one line."""
from __future__ import annotations

import pytest
import torch

from transformer.dictionaries import DictionaryError, Site, TrainSettings, evaluate, train_dictionary

SITE = Site.parse("resid:L2")


def _sparse_data(n: int = 4000, d: int = 16, true: int = 24, active: int = 2) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    directions = torch.randn(true, d, generator=gen)
    directions /= directions.norm(dim=1, keepdim=True)
    which = torch.rand(n, true, generator=gen).argsort(1)[:, :active]
    coef = torch.zeros(n, true).scatter(1, which, 1 + torch.rand(n, active, generator=gen))
    return coef @ directions + 0.5


@pytest.mark.parametrize("activation", ["topk", "relu"])
def test_a_dictionary_learns_sparse_directions(activation: str):
    data = _sparse_data()
    settings = TrainSettings(48, activation, k=2, l1=1e-3, steps=400, batch_size=256, lr=1e-2)
    dictionary, report = train_dictionary(data, SITE, settings, model="synthetic")
    assert report.explained_variance >= 0.9, report
    again = evaluate(dictionary, data)
    assert (report.explained_variance, report.l0, report.dead, report.steps) == (again.explained_variance, again.l0,
                                                                                 again.dead, 400)
    torch.testing.assert_close(dictionary.w_dec.norm(dim=1), torch.ones(48))
    assert dictionary.trained and dictionary.metrics["explained_variance"] == report.explained_variance
    assert (report.l0 <= 2) if activation == "topk" else report.l0 > 0
    assert dictionary.site == SITE and dictionary.model == "synthetic"


def test_progress_comes_to_the_callback_and_cancel_keeps_the_result():
    seen = []
    settings = TrainSettings(16, steps=100, batch_size=64)
    dictionary, report = train_dictionary(_sparse_data(500), SITE, settings, on_step=seen.append,
                                          cancel=lambda: len(seen) >= 2, report_every=10)
    assert [s.step for s in seen] == [10, 20] and report.cancelled and report.steps == 20
    assert dictionary.n_features == 16 and "cancelled at step 20" in report.line(16)


@pytest.mark.parametrize(("settings", "message"), [
    (TrainSettings(8, "jumprelu"), "trains topk or relu"),
    (TrainSettings(8, k=9), "--k 9"),
    (TrainSettings(0), "--features 0"),
])
def test_settings_that_cannot_train_are_one_line(settings, message):
    with pytest.raises(DictionaryError, match=message):
        train_dictionary(_sparse_data(100), SITE, settings)
