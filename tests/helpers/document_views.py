"""A document's views as the user sees them on a page under AppTest: the document typed into the page's box and
decoded, the layer, head, row and zoom region picked, and the zoom's drawn cells (the chart's own data), to check
against the library's numbers for the same picks."""
from __future__ import annotations

import pandas as pd
import torch
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import assert_no_exception, charts, open_app, poll, texts
from transformer.charts import zoom_frame
from ui.models import MODEL_KEY
from ui.views import LINK_PARAMS
from ui.views.features import ZOOM_KEYS_KEY, ZOOM_ROWS_KEY


def open_document(page: str, model: str, text: str) -> AppTest:
    """The page with `model` picked and `text` typed into its own box (a document: the estimate and its button)."""
    at = open_app()
    at.query_params.clear()
    at.selectbox(key=MODEL_KEY).set_value(model).run()
    at.switch_page(f"pages/{page}.py").run()
    at.session_state[LINK_PARAMS[page]["layer"]] = 0  # the page's first layer (a short input left its last)
    at.text_area(key=LINK_PARAMS[page]["text"]).input(text).run()
    assert_no_exception(at)
    return at


def decode_document(at: AppTest) -> AppTest:
    """Start the document's decode (its button) and wait for it to be shown."""
    at.button(key="document_job_run").click().run()
    assert poll(at, lambda a: any("after" in t for t in texts(a.success)), seconds=180)
    assert_no_exception(at)
    return at


def picked(at: AppTest, page: str = "decode") -> tuple[int, int, int]:
    """The page's layer, head (0-based) and query row, as its pickers hold them for a document."""
    keys = LINK_PARAMS[page]
    return (int(at.selectbox(key=keys["layer"]).value), int(at.selectbox(key=keys["head"]).value),
            int(at.number_input(key=f"{page}_document_row").value))


def picked_zoom(at: AppTest) -> tuple[int, int, tuple[int, int], tuple[int, int]]:
    """(layer, head, rows, keys) of the zoom as the pickers hold them (0-based layer and head; ends exclusive)."""
    layer, head, _ = picked(at)
    r0, r1 = at.slider(key=ZOOM_ROWS_KEY).value
    k0, k1 = at.slider(key=ZOOM_KEYS_KEY).value
    return layer, head, (int(r0), int(r1)), (int(k0), int(k1))


def drawn_zoom(at: AppTest) -> pd.DataFrame:
    """The zoom's drawn cells (row, key, weight, ...), sorted by row and key."""
    zoom = next(c for c in charts(at) if "exact weights" in c["title"])
    return zoom["frames"][""].sort_values(["row", "key"]).reset_index(drop=True)


def assert_zoom_shows(at: AppTest, store, *, atol: float = 0.0, rtol: float = 0.0) -> tuple:
    """The zoom drawn equals the library's zoom of `store` (the eager model's, or the decode's) for the region and
    head picked; the picks."""
    layer, head, rows, keys = picks = picked_zoom(at)
    want, _, _ = zoom_frame(store, layer, head, rows, keys)
    want = want.sort_values(["row", "key"]).reset_index(drop=True)
    shown = drawn_zoom(at)
    assert shown[["row", "key", "row_end", "key_end"]].astype(int).equals(
        want[["row", "key", "row_end", "key_end"]].astype(int))
    torch.testing.assert_close(torch.tensor(shown["weight"].to_numpy()), torch.tensor(want["weight"].to_numpy()),
                               atol=atol, rtol=rtol)
    return picks
