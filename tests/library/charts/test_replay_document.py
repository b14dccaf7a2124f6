"""The replay page's document mode (a decode kept as a store): the overview of each head of the layer shown, the
region shown with its exact weights and each decode step's row over every key travel in one file within 20 MB, equal
to the store's own weights; a region outside the input and a page past the limit are refused in one line."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.hf_causal_models import build, lines
from tests.library.charts.test_replay import page_data
from transformer.analysis import summarise_layer
from transformer.charts import MAX_REPLAY_BYTES, REGION_SIDE, ReplayTooLargeError, replay_html
from transformer.charts import replay as replay_module
from transformer.decode import greedy_decode
from transformer.store import open_model

TEXT = "\n".join(lines(24))  # about 1,000 tokens


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    adapter = open_model(str(build("qwen2", tmp_path_factory.mktemp("long") / "qwen2")))
    out = greedy_decode(adapter, TEXT, max_steps=4, keep="store")
    assert out.trace.store is not None and out.trace.store.layer("self", 0).n_keys > 600
    return out


def test_the_page_carries_the_overview_the_region_and_the_step_rows_exactly(result):
    store = result.trace.store
    n = store.layer("self", 1).n_keys
    region = (n - 300, n - 20, 5, 290)  # wider than TILE a side in rows: kept as the max of each cell
    page = replay_html(result, "qwen2-long", "random weights", layer=1, region=region)
    assert len(page.encode()) < MAX_REPLAY_BYTES and "default-src 'none'" in page
    data = page_data(page)
    assert data["layer"] == 1 and data["heads"] == 4 and data["keys"] == n and len(data["tokens"]) == n
    overview = torch.tensor(data["overview"]["values"]) / 1000  # (H, cells, cells)
    want = summarise_layer(store, "self", 1, resolution=96).overview
    torch.testing.assert_close(overview, want, atol=6e-4, rtol=0)
    r = data["region"]
    assert (r["r0"], r["r1"], r["k0"], r["k1"], r["row_cell"], r["key_cell"]) == (*region, 2, 2)
    for head in range(4):
        exact = store.tile("self", 1, head, slice(region[0], region[1]), slice(region[2], region[3]))
        pooled = torch.nn.functional.max_pool2d(exact[None], 2, ceil_mode=True)[0]
        torch.testing.assert_close(torch.tensor(r["values"][head]) / 1000, pooled, atol=6e-4, rtol=0)
    offset = result.trace.step_offset
    assert len(data["strips"]["values"]) == len(data["top"]) == len(result.steps) == 4
    for step in range(4):
        row = store.tile("self", 1, 2, [offset + step], slice(None))[0]
        assert [k for k, _ in data["top"][step][2]] == row.topk(5).indices.tolist()
        strip = torch.tensor(data["strips"]["values"][step][2]) / 1000
        assert len(strip) == 512 and abs(float(strip.max()) - float(row.max())) < 6e-4  # max-pooled: the peak kept


def test_a_region_outside_the_input_and_a_page_past_the_limit_are_refused(result, monkeypatch):
    n = result.trace.store.layer("self", 0).n_keys
    with pytest.raises(ValueError, match=rf"^the region rows 0–{n + 1:,} × keys 0–10 is outside the input"):
        replay_html(result, "m", layer=0, region=(0, n + 1, 0, 10))
    monkeypatch.setattr(replay_module, "MAX_REPLAY_BYTES", 1_000_000)
    with pytest.raises(ReplayTooLargeError, match="a replay file holds at most 1 MB. Zoom to a smaller region"):
        replay_html(result, "m", layer=0, region=(0, 256, 0, 256))


def test_the_one_replay_entry_replays_a_document_in_its_own_mode(result):
    n = result.trace.store.layer("self", 0).n_keys
    data = page_data(replay_html(result, "qwen2-long", "w"))  # the store decides the mode, not the caller
    region = data["region"]
    assert (region["r0"], region["r1"], region["k0"], region["k1"]) == (n - REGION_SIDE, n, n - REGION_SIDE, n)
    assert data == page_data(replay_html(result, "qwen2-long", "w", layer=0, region=(n - 256, n, n - 256, n)))
