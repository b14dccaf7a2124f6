"""AppTest: the circuit view (graph, curve, slider, an edge's composition and QK table) draws with no exception, inside
the content column of a 1280-px page, on every shipped model (its own EAP search; the Multi30k model's scores drawn
at random) and at GPT-2 small's and bart-large's shapes (random models built from their configs, shared per worker;
the graph and the pair are the model's own, the scores drawn at random: the search itself at these shapes takes
minutes and is measured in bench/speed/circuits)."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import assert_no_exception, charts
from tests.helpers.circuit_results import drawn_result, ids_pair
from tests.helpers.real_shapes import point_app_at
from transformer.analysis.circuits import find_circuit
from ui.models import shared_model
from ui.views.features import CircuitRun

pytestmark = pytest.mark.slow
CHECKPOINTS = Path(__file__).resolve().parents[3] / "checkpoints"
SHIPPED = sorted(p.name for p in CHECKPOINTS.iterdir() if (p / "config.json").is_file())
REAL = ("gpt2-heads", "bart-large-heads")
CONTENT_PX = 760  # the content column of a 1280-px window beside the sidebar: the graph a row, the curve 3/5 of it
SEARCHED = 2_000  # edges up to which the test runs the search itself (the task models; Multi30k's 6 + 6 layers not)


@pytest.fixture
def sizes_env(monkeypatch, tmp_path, real_shapes_root):
    return point_app_at(monkeypatch, tmp_path / "runs", real_shapes_root)


def _page(active, run) -> None:
    from ui.views.features import show_circuit
    show_circuit(active, run)


def _head_edge(run: CircuitRun, n: int) -> int | None:
    """The first edge of the top n between two heads into a query, key or value (its composition and QK table)."""
    return next((i for i, e in enumerate(run.result.top(n)) if e.input in ("q", "k", "v") and ":L" in e.source
                 and not e.source.endswith(".mlp") and not e.target.endswith(".mlp")), None)


def _draws(active, run: CircuitRun) -> AppTest:
    at = AppTest.from_function(_page, kwargs={"active": active, "run": run}, default_timeout=300).run()
    assert_no_exception(at)
    drawn = {c["title"].split(" ")[0]: c["spec"] for c in charts(at)}
    assert {"Circuit", "Faithfulness"} <= set(drawn), list(drawn)
    assert drawn["Circuit"]["width"] <= CONTENT_PX and drawn["Faithfulness"]["width"] <= CONTENT_PX * 3 / 5
    n = at.slider(key="compare_circuits_n").value
    assert n == run.result.faithfulness.n
    assert any(m.label.startswith("Share of A − B") for m in at.metric)
    edge = _head_edge(run, n)
    if edge is not None:
        at.selectbox(key="compare_circuits_edge").set_value(edge).run()
        assert_no_exception(at)
        assert any("strongest cell" in c.value for c in at.caption)
    return at


@pytest.mark.parametrize("folder", SHIPPED)
def test_the_view_draws_on_every_shipped_model(sizes_env, folder: str):
    active = shared_model(f"shipped:{folder}")
    text = "a man drinks a <mask>" if not active.family.decodes else "a man drinks a beer"
    pair = ids_pair(active.adapter, text)
    graph = pair.clean.graph
    result = find_circuit([pair], method="eap") if graph.n_edges <= SEARCHED else drawn_result(graph)
    _draws(active, CircuitRun(result, pair))


@pytest.mark.parametrize("folder", REAL)
def test_the_view_draws_at_real_shapes(sizes_env, folder: str):
    active = shared_model(f"hf:{folder}")
    pair = ids_pair(active.adapter, "Two young children are playing soccer")
    at = _draws(active, CircuitRun(drawn_result(pair.clean.graph), pair))
    circuit = next(c for c in charts(at) if c["title"].startswith("Circuit"))
    assert "strongest" in circuit["title"]  # thousands of edges asked: the strongest drawn, the title says so
