"""A document's views as the user sees them on a page under AppTest: the layer, head and zoom region picked, and the
zoom's drawn cells (the chart's own data), to check against the library's numbers for the same picks."""
from __future__ import annotations

import pandas as pd
import torch
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import charts
from transformer.charts import zoom_frame
from ui.views.features import ZOOM_KEYS_KEY, ZOOM_ROWS_KEY

LAYER_KEY, HEAD_KEY = "long_layer", "long_head"


def picked_zoom(at: AppTest) -> tuple[int, int, tuple[int, int], tuple[int, int]]:
    """(layer, head, rows, keys) of the zoom as the pickers hold them (0-based layer and head; ends exclusive)."""
    layer, head = int(at.number_input(key=LAYER_KEY).value) - 1, int(at.number_input(key=HEAD_KEY).value) - 1
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
