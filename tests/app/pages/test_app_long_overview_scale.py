"""A document's overview colour scale (a tiny Qwen2 with an 8,192-token context, ~1,200 tokens): log by default with
its floor named in the legend, linear when picked (0 to the map's max), the pick kept in the link (`oscale=`, only
when not the default) and reopened by it; either way each cell's weight is the exact max of the store's weights it
covers."""
from __future__ import annotations

import pytest

from tests.app.pages.test_app_long_document import _document_open, app_root  # noqa: F401 - the fixture
from tests.helpers.app_session import assert_no_exception, charts, open_link, poll
from tests.helpers.hf_causal_models import lines
from ui.server.shared_cache import shared_cache
from ui.views.features import ZOOM_ROWS_KEY
from ui.views.kit import LINK_PARAMS

DOC = "\n".join(lines(30))  # past the store's 1,024-token threshold
SCALE_KEY = LINK_PARAMS["decode"]["oscale"]


def _overview(at) -> tuple[dict, object]:
    """The overview's cells layer (its colour encoding) and its data frame."""
    chart = next(c for c in charts(at) if c["title"].startswith("Overview: L1 H1"))
    cells = chart["spec"]["layer"][0]
    name = (cells.get("data") or chart["spec"].get("data"))["name"]
    return cells, chart["frames"][name]


def _link(at) -> dict[str, str]:
    return {k: (v[-1] if isinstance(v, list) else v) for k, v in at.query_params.items()}


@pytest.mark.usefixtures("app_root")
def test_the_overview_switches_between_log_and_linear_and_the_link_keeps_it():
    at = _document_open(DOC)
    at.button(key="document_job_run").click().run()
    assert poll(at, lambda a: any(s.key == ZOOM_ROWS_KEY for s in a.slider), seconds=240)
    store = next(v for k, (v, _, _) in shared_cache()._items.items() if k[0] == "document-decode").trace.store
    assert at.radio(key=SCALE_KEY).value == "log"
    cells, frame = _overview(at)
    color = cells["encoding"]["color"]
    assert color["scale"]["type"] == "log" and color["title"][0] == "max weight"
    floor = color["scale"]["domain"][0]
    assert color["title"][1] == f"log; under {floor:.0e} as {floor:.0e}".replace("e-0", "e-")
    assert 0 < floor < frame["weight"].max() and "oscale" not in _link(at)  # the default: out of the link
    assert (frame["drawn"] == frame["weight"].clip(lower=floor)).all()  # the colour's copy, clipped at the floor
    for i in (0, 7, len(frame) // 3, len(frame) - 1):  # each cell's weight: the exact max of what it covers
        row = frame.iloc[i]
        exact = store.tile("self", 0, 0, slice(int(row["row"]), int(row["row_end"])),
                           slice(int(row["key"]), int(row["key_end"])))
        assert row["weight"] == pytest.approx(float(exact.max()), abs=1e-6)

    at.radio(key=SCALE_KEY).set_value("linear").run()
    assert_no_exception(at)
    lcells, lframe = _overview(at)
    lcolor = lcells["encoding"]["color"]
    assert lcolor["scale"]["type"] == "linear"
    assert lcolor["scale"]["domain"] == [0, pytest.approx(lframe["weight"].max())]
    assert lcolor["title"] == ["max weight", "linear, 0 to the max"]
    assert lframe["weight"].tolist() == frame["weight"].tolist()  # the same weights, drawn on another scale
    link = _link(at)
    assert link["oscale"] == "linear"

    other = open_link("decode", link)  # the decode and its summaries are shared: drawn at once
    assert_no_exception(other)
    assert other.radio(key=SCALE_KEY).value == "linear"
    assert _overview(other)[0]["encoding"]["color"]["scale"]["type"] == "linear"
