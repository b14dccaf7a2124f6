"""A document's summaries run as the session's background job: the decode steps' rows (exact) and the current
head's overview come before the other heads; Cancel stops the pass and a button offers it again; the summaries are
kept per decode (a second session draws them at once); the link keeps the document's decode steps, so a reload or a
shared link reopens the same decode; the replay file carries the view shown."""
from __future__ import annotations

import importlib
import threading

import pytest

from tests.app.pages.test_app_long_document import DOC, NAME, _document_open, app_root  # noqa: F401 - the fixture
from tests.helpers.app_session import assert_no_exception, capture_downloads, charts, open_link, poll, texts
from tests.helpers.document_views import picked_zoom
from tests.library.charts.test_replay import page_data
from ui.models import MODEL_KEY
from ui.server import text_hash
from ui.views import LINK_PARAMS

STEPS = LINK_PARAMS["decode"]["dsteps"]
summaries_module = importlib.import_module("ui.views.features.map_overview")  # the kit's face names its function so


def _titles(at) -> list[str]:
    return [c["title"] for c in charts(at)]


def _stats(at) -> list:
    """The head statistics tables drawn (from the layer's streamed pass)."""
    return [d.value for d in at.dataframe if "peak weight" in d.value.columns]


def _decoded(at, steps: int = 3):
    at.number_input(key=STEPS).set_value(steps).run()
    at.button(key="document_job_run").click().run()
    assert poll(at, lambda a: any("after" in t for t in texts(a.success)), seconds=180)
    return at


@pytest.fixture
def held(monkeypatch):
    """Every head's pass waits at its end until the test lets it go (reporting progress, so Cancel stops it); the
    page hands a job to its progress bar at once (as a long one would)."""
    gate, real = threading.Event(), summaries_module.summarise_layer
    monkeypatch.setattr(importlib.import_module("ui.views.kit.background"), "WAIT_S", 0.0)

    def waiting(store, kind, layer, *, heads=None, progress=None, **options):
        out = real(store, kind, layer, heads=heads, progress=progress, **options)
        while heads is None and not gate.wait(0.05):
            progress(0.99)
        return out

    monkeypatch.setattr(summaries_module, "summarise_layer", waiting)
    return gate


def test_steps_rows_and_the_current_head_come_first_and_cancel_offers_the_pass_again(app_root, held):  # noqa: F811
    at = _decoded(_document_open())
    assert any(t.startswith("The decode steps' rows: L1 H1 over all") for t in _titles(at))
    assert poll(at, lambda a: any("This head's overview, from its own pass" in t for t in texts(a.caption)))
    assert any(t.startswith("Overview: L1 H1") for t in _titles(at)) and not _stats(at)  # no head statistics yet
    assert any(t.startswith("Exact, from the store") and "step 1:" in t for t in texts(at.caption))
    at.button(key="overview_job_cancel").click().run()
    assert poll(at, lambda a: [b for b in a.button if b.key == "overview_job_run"])  # offered, not restarted
    assert not _stats(at)
    held.set()
    at.button(key="overview_job_run").click().run()
    assert poll(at, lambda a: len(_stats(a)) == 1, seconds=60)
    assert _stats(at)[0]["peak weight"].between(0, 1).all()
    other = open_link("decode", {k: (v[-1] if isinstance(v, list) else v) for k, v in at.query_params.items()})
    assert _stats(other) and any(t.startswith("Overview: L1 H1") for t in _titles(other))  # kept for the decode


def test_the_link_keeps_the_documents_steps_and_the_replay_carries_the_view(app_root, monkeypatch):  # noqa: F811
    downloads = capture_downloads(monkeypatch)
    at = _decoded(_document_open(), steps=5)
    link = {k: (v[-1] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert link["doc"] == text_hash(DOC) and link["dsteps"] == "5"
    reopened = open_link("decode", link)
    assert_no_exception(reopened)
    assert reopened.number_input(key=STEPS).value == 5
    assert any(t.startswith("The decode steps' rows") for t in _titles(reopened))  # the same decode, kept: no job
    assert any("exact weights" in t for t in _titles(reopened))  # the zoom drawn at once
    name = next(n for n in downloads if n.endswith("_document.html"))
    data = page_data(downloads[name]())
    _, _, rows, _ = picked_zoom(at)
    assert (data["region"]["r0"], data["region"]["r1"]) == rows and len(data["top"]) == 5
    plain = open_link("decode", {"model": f"hf:{NAME}"})
    assert "dsteps" not in plain.query_params  # no document shown: no steps in the link
    assert plain.session_state[MODEL_KEY] == f"hf:{NAME}"


def test_another_layer_waits_for_the_running_pass_with_its_bar_and_cancel(app_root, held):  # noqa: F811
    at = _decoded(_document_open())
    assert poll(at, lambda a: any("This head's overview, from its own pass" in t for t in texts(a.caption)))
    at.selectbox(key=LINK_PARAMS["decode"]["layer"]).set_value(1).run()  # layer 2
    assert_no_exception(at)
    assert [b for b in at.button if b.key == "overview_job_cancel"]  # layer 1's pass: still cancellable here
    assert not any("still running" in t for t in texts(at.info))
    held.set()
    assert poll(at, lambda a: len(_stats(a)) == 1, seconds=90)  # then layer 2's pass, and its statistics
    assert any("Layer 2's heads over all" in t for t in texts(at.caption))
