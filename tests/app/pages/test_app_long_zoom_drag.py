"""A document's zoom region dragged on its overview (a tiny Qwen2 with an 8,192-token context, ~1,200 tokens): the
drag's selection moves the rows and keys pickers (snapped to tokens, clipped to the input, at most 1,024 a side),
the zoomed tile is the store's own tile of that region, the link keeps the region and reopens it, a picker moved
after the drag wins, and a drag outside the input is refused in one message that leaves the region as it was."""
from __future__ import annotations

import pytest

from tests.app.pages.test_app_long_document import _document_open, app_root  # noqa: F401 - the fixture
from tests.helpers.app_session import assert_no_exception, charts, open_link, poll, texts
from tests.helpers.document_views import assert_zoom_shows, drawn_zoom, picked_zoom
from tests.helpers.hf_causal_models import lines
from transformer.charts import OVERVIEW_BRUSH, visible_token
from ui.server.shared_cache import shared_cache
from ui.views.features import OVERVIEW_KEY, ZOOM_KEYS_KEY, ZOOM_ROWS_KEY

DOC = "\n".join(lines(30))  # past the store's 1,024-token threshold


def _drag(at, rows: list[float], keys: list[float]):
    """What Streamlit leaves in the chart's state after a drag: each axis's two ends in its data (token positions)."""
    at.session_state[OVERVIEW_KEY] = {"selection": {OVERVIEW_BRUSH: {"row": rows, "key": keys}}}
    return at.run()


def _zoom(at) -> tuple[tuple[int, int], tuple[int, int]]:
    return tuple(at.slider(key=ZOOM_ROWS_KEY).value), tuple(at.slider(key=ZOOM_KEYS_KEY).value)


def _store():
    decode = next(v for k, (v, _, _) in shared_cache()._items.items() if k[0] == "document-decode")
    return decode.trace.store


@pytest.mark.usefixtures("app_root")
def test_a_drag_on_the_overview_zooms_to_its_tokens_and_the_link_keeps_them():
    at = _document_open(DOC)
    at.button(key="document_job_run").click().run()
    assert poll(at, lambda a: any(s.key == ZOOM_ROWS_KEY for s in a.slider), seconds=240)
    assert "0 to 192 shows rows 0–191" in at.slider(key=ZOOM_ROWS_KEY).help  # the handles' end said as the title's
    store = _store()
    n = store.layer("self", 0).n_rows
    overview = next(c for c in charts(at) if c["title"].startswith("Overview: L1 H1"))
    assert any(p.get("name") == OVERVIEW_BRUSH for p in overview["spec"]["params"])  # the brush is on the chart
    assert overview["spec"]["width"] <= 1280

    at = _drag(at, rows=[n - 300.6, n - 40.2], keys=[12.3, 400.9])
    assert_no_exception(at)
    assert _zoom(at) == ((n - 301, n - 40), (12, 401))  # snapped outward to whole tokens
    layer, head, rows, keys = assert_zoom_shows(at, store)  # drawn: the store's exact tile of the region picked
    assert (rows, keys) == ((n - 301, n - 40), (12, 401))
    assert float(drawn_zoom(at)["weight"].max()) == float(store.tile("self", layer, head, slice(*rows),
                                                                      slice(*keys)).max())
    assert any(t.startswith(f"Rows {n - 301:,}–{n - 41:,} × keys 12–400") for t in (c["title"] for c in charts(at)))
    box = next(c for c in charts(at) if c["title"].startswith("Overview"))["spec"]["layer"][1]  # the region outlined
    assert box["mark"]["type"] == "rect"
    assert at.query_params["zoom"] in ([f"{n - 301}-{n - 41},12-400"], f"{n - 301}-{n - 41},12-400")

    at.slider(key=ZOOM_KEYS_KEY).set_value((50, 80)).run()  # the picker moved after the drag: the picker wins
    assert _zoom(at) == ((n - 301, n - 40), (50, 80))
    assert picked_zoom(at)[2:] == ((n - 301, n - 40), (50, 80))
    assert_zoom_shows(at, store)

    at = _drag(at, rows=[-50.0, n + 70.0], keys=[n - 10.5, n + 99.0])  # past both ends, rows over 1,024
    assert _zoom(at) == ((0, 1024), (n - 11, n))  # clipped to the input, cut to the zoom's side from its start
    assert not at.error
    assert f"The drag covered {n:,} rows × 11 keys; the zoom takes at most 1,024 a side" in " ".join(texts(at.caption))

    at = _drag(at, rows=[10.0, 20.0], keys=[n + 5.0, n + 60.0])  # wholly past the input
    assert [t for t in texts(at.error) if t.startswith("Not zoomed: the keys")] == [
        f"Not zoomed: the keys {n + 5:,}–{n + 60:,} lie outside the input's {n:,} tokens (0–{n - 1:,}). "
        "The zoom keeps its region."]
    assert _zoom(at) == ((0, 1024), (n - 11, n))

    link = {k: (v[-1] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert link["zoom"] == f"0-1023,{n - 11}-{n - 1}"
    other = open_link("decode", link)  # the decode and its summaries are shared: drawn at once
    assert_no_exception(other)
    assert _zoom(other) == ((0, 1024), (n - 11, n))
    assert_zoom_shows(other, _store())  # the linked region drawn (1,024 rows pooled to cells of 4)
    assert picked_zoom(other)[2:] == ((0, 1024), (n - 11, n))
    small = open_link("decode", {**link, "zoom": f"{n - 40}-{n - 1},{n - 30}-{n - 1}"})  # 40 x 30: tokens named
    tile = next(c for c in charts(small) if c["title"].startswith(f"Rows {n - 40:,}–"))
    labels = {p["name"]: p["value"] for p in tile["spec"]["params"]}
    x_axis = tile["spec"]["encoding"]["x"]["axis"]
    assert x_axis["title"].startswith("key position") and x_axis["labelExpr"].endswith(f"[datum.value - {n - 30}]")
    decode = next(v for k, (v, _, _) in shared_cache()._items.items() if k[0] == "document-decode")
    shown = [visible_token(t) for t in decode.trace.decoder_input_tokens[n - 30: n]]
    assert labels[x_axis["labelExpr"].split("[")[0]] == shown  # the labels are the tokens, as data
    outside = open_link("decode", {**link, "zoom": f"{n + 1}-{n + 9},0-5"})
    assert any(t.startswith("Not zoomed: the rows") for t in texts(outside.error))
