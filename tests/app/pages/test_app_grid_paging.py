"""AppTest: on a model with bart-large's 12 layers x 16 heads the Attention page draws every layer of its all-heads
grid at once, a range of layers on request (every layer one click away), fewer when the input is too long for
all, and never raises."""
from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, charts, open_app, text_box
from transformer.charts import panels
from ui.models import MODEL_KEY

CAPTION = ("Two young children in blue shirts are playing soccer on a green field near the old church while their "
           "parents watch.")


def _attention(monkeypatch, tmp_path: Path, real_shapes_root: Path):
    """The Attention page on the bart-large-shaped model with the caption."""
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(real_shapes_root))
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:bart-large-heads").run()
    at.switch_page("pages/attention.py").run()
    text_box(at, "attention_text").input(CAPTION).run()
    return at


def _grid(at) -> dict:
    (grid,) = [c for c in charts(at) if "heads and mean" in c["title"]]
    return grid


def _panels(grid: dict) -> set[tuple[int, int]]:
    frame = max(grid["frames"].values(), key=len)
    return set(zip(frame["layer"], frame["head"], strict=True))


def test_the_grid_draws_every_layer_of_a_bart_large_shape_model_and_a_range_on_request(monkeypatch, tmp_path,
                                                                                        real_shapes_root):
    at = _attention(monkeypatch, tmp_path, real_shapes_root)
    assert_no_exception(at)
    kind = at.radio(key="attention_kind").value
    picker = at.slider(key=f"attention_grid_layers_{kind}_12")
    assert picker.value == (1, 12)
    assert len(_panels(_grid(at))) == 12 * 17  # every layer's heads and mean
    assert at.button(key=f"attention_grid_all_{kind}").disabled

    at.slider(key=f"attention_grid_layers_{kind}_12").set_range(9, 12).run()
    assert_no_exception(at)
    assert {layer for layer, _ in _panels(_grid(at))} == {8, 9, 10, 11}

    at.button(key=f"attention_grid_all_{kind}").click().run()  # every layer again: one click
    assert_no_exception(at)
    assert at.slider(key=f"attention_grid_layers_{kind}_12").value == (1, 12)
    assert len(_panels(_grid(at))) == 12 * 17


def test_too_many_layers_for_the_input_offer_fewer(monkeypatch, tmp_path, real_shapes_root):
    at = _attention(monkeypatch, tmp_path, real_shapes_root)
    kind = at.radio(key="attention_kind").value
    large = next(c for c in charts(at) if "mean of 16 heads" in c["title"])
    heatmap = max(large["frames"].values(), key=len)
    keys = heatmap["key_index"].nunique()
    window = [s for s in at.slider if str(s.key).startswith(f"attention_keys_{kind}_")]
    if window:  # the large map of a long input shows a window of its keys: the grid's panels hold them all
        keys = int(str(window[0].key).rsplit("_", 1)[1])
    per_layer = 17 * heatmap["query_index"].nunique() * keys
    monkeypatch.setattr(panels, "MAX_IMAGE_CELLS", 3 * per_layer)  # as if the input were much longer
    at.run()  # the range drawn so far (every layer) no longer fits
    assert_no_exception(at)
    assert not [c for c in charts(at) if "heads and mean" in c["title"]]
    assert any("3 layer(s) at a time fit" in str(m.value) for m in at.info)
    at.button(key=f"attention_grid_fewer_{kind}").click().run()
    assert_no_exception(at)
    assert at.slider(key=f"attention_grid_layers_{kind}_12").value == (1, 3)
    assert len(_panels(_grid(at))) == 3 * 17

    monkeypatch.setattr(panels, "MAX_IMAGE_CELLS", 1)  # not even one layer: the page points to the large map
    at.run()
    assert_no_exception(at)
    assert not [c for c in charts(at) if "heads and mean" in c["title"]]
    assert any("too long to draw every head" in str(m.value) for m in at.info)


def test_the_head_statistics_of_many_heads_list_the_layer_picked(monkeypatch, tmp_path, real_shapes_root):
    """192 heads a kind: every head is in the overview map; the statistics table holds the large map's layer."""
    at = _attention(monkeypatch, tmp_path, real_shapes_root)
    assert_no_exception(at)

    def rows() -> list[str]:
        (table,) = [m for m in at.markdown if "studio-table" in str(m.value)]
        return re.findall(r"<tr><td>([^<]*)</td>", str(table.value))

    assert at.selectbox(key="attention_layer").value == 11  # the last layer at first
    assert any("Head statistics" in str(m.value) and "layer 12" in str(m.value) for m in at.markdown)
    assert rows() == [*(f"L12 H{h}" for h in range(1, 17)), "L12 mean"]
    at.selectbox(key="attention_layer").set_value(2).run()
    assert_no_exception(at)
    assert rows() == [*(f"L3 H{h}" for h in range(1, 17)), "L3 mean"]
