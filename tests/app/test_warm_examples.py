"""The server's warm-up holds what Home shows and offers a newcomer: the default model's decode of Home's input, the
toy model its button opens and every example link's model and decode are in the shared caches, so that a first
visit and a first click only draw (the waits: bench/app/home_waits)."""
from __future__ import annotations

import pytest

from tests.helpers import ROOT
from ui.links import EXAMPLE_LINKS, TOY_MODEL, link_decodes
from ui.models import catalog, shared_model
from ui.server.shared_cache import shared_cache
from ui.shell.serve import warm_up
from ui.views import default_text
from ui.views.kit import inference


@pytest.fixture
def shipped(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    catalog.load_shared_checkpoint.clear()
    shared_cache().clear()
    yield
    shared_cache().clear()


def test_after_start_up_home_and_its_offers_need_no_load_and_no_decode(shipped, monkeypatch):
    warm_up()
    calls = []

    def record(*args, **kwargs):
        calls.append(args)
        raise AssertionError("not warmed")

    monkeypatch.setattr(catalog, "load_checkpoint", record)
    monkeypatch.setattr(inference, "queued_greedy", record)
    monkeypatch.setattr(inference, "greedy_decode", record)
    wanted = [d for e in EXAMPLE_LINKS for d in link_decodes(e.page, e.params())]
    assert {model for model, _, _ in wanted} == {"shipped:reverse", "shipped:sort", TOY_MODEL}
    for model, text, top_k in wanted:  # what each example link's page decodes first
        result = inference.greedy(shared_model(model), text, top_k=top_k)
        assert result.source_text == text and result.steps
    home = shared_model(None)  # a first visit: Home on the default model, with its input
    assert home is not None and inference.greedy(home, default_text(home)).steps
    toy = shared_model(TOY_MODEL)  # Home after its toy-model button: the toy model's own input
    assert inference.greedy(toy, default_text(toy)).source_text == default_text(toy)
    assert calls == []
