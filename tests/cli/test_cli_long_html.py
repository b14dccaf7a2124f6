"""`decode MODEL - --html PATH` above 1,024 prompt tokens writes the long replay page (the app's Download replay):
one layer's overview per head, the region asked for (or the last rows by the last keys) and each decode step's row,
under the replay's 20 MB, its step rows equal to the store's; a region outside the input, --layer or --region
without --html or below the threshold, and a page past the limit are one line each."""
from __future__ import annotations

import io

import pytest
import torch

from tests.helpers.hf_causal_models import SIZE, build, lines
from tests.library.charts.test_replay import page_data
from transformer.charts import MAX_REPLAY_BYTES
from transformer.cli import main
from transformer.decode import load_trace_json

DOC = "\n".join(lines(34))  # ~1,300 tokens of the toy tokenizer, above STORE_ABOVE


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return build("qwen2", tmp_path_factory.mktemp("long_html") / "qwen2", size={**SIZE, "positions": 4096})


def run(capsys, monkeypatch, *argv):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(DOC.encode("utf-8")), encoding="utf-8"))
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_long_replay_page_is_written_with_the_stores_step_rows(qwen, capsys, monkeypatch, tmp_path):
    page, trace = tmp_path / "long.html", tmp_path / "t.json"
    code, out, err = run(capsys, monkeypatch, "decode", qwen, "-", "--max-steps", "3", "--html", page,
                         "--layer", "2", "--region", "1000-1199,40-339", "--trace-json", trace)
    assert code == 0, err
    assert page.stat().st_size < MAX_REPLAY_BYTES
    data = page_data(page.read_text(encoding="utf-8"))
    store = load_trace_json(trace).trace.store
    one = store.layer("self", 1)
    assert one.n_keys > 1024 and data["keys"] == one.n_keys and data["layer"] == 1 and data["heads"] == 4
    region = data["region"]
    assert (region["r0"], region["r1"], region["k0"], region["k1"]) == (1000, 1200, 40, 340)
    exact = store.tile("self", 1, 3, slice(1000, 1200), slice(40, 340))  # 300 keys: kept as the max of 2 keys
    pooled = torch.nn.functional.max_pool2d(exact[None], (1, 2), ceil_mode=True)[0]
    torch.testing.assert_close(torch.tensor(region["values"][3]) / 1000, pooled, atol=6e-4, rtol=0)
    offset = data["offset"]
    assert len(data["strips"]["values"]) == len(data["top"]) == 3 and out.strip()
    for step in range(3):
        for head in range(4):
            row = store.tile("self", 1, head, [offset + step], slice(None))[0]
            assert [k for k, _ in data["top"][step][head]] == row.topk(5).indices.tolist()
            bins = torch.nn.functional.adaptive_max_pool1d(row[None, None], len(data["strips"]["values"][0][0]))
            torch.testing.assert_close(torch.tensor(data["strips"]["values"][step][head]) / 1000, bins[0, 0],
                                       atol=6e-4, rtol=0)


def test_the_default_is_layer_1_and_the_last_256_rows_by_the_last_256_keys(qwen, capsys, monkeypatch, tmp_path):
    page = tmp_path / "long.html"
    code, _, err = run(capsys, monkeypatch, "decode", qwen, "-", "--max-steps", "2", "--html", page)
    assert code == 0, err
    data = page_data(page.read_text(encoding="utf-8"))
    r = data["region"]
    assert data["layer"] == 0 and (r["r0"], r["r1"], r["k0"], r["k1"]) == (
        data["rows"] - 256, data["rows"], data["keys"] - 256, data["keys"])


def test_refusals_are_one_line_each(qwen, capsys, monkeypatch, tmp_path):
    page = tmp_path / "long.html"
    code, _, err = run(capsys, monkeypatch, "decode", qwen, "-", "--max-steps", "2", "--html", page,
                       "--region", "5000-5100,0-99")
    assert code == 2 and err.count("\n") == 1 and "is outside the input" in err and not page.exists()
    code, _, err = run(capsys, monkeypatch, "decode", qwen, "-", "--region", "0-99,0-99")
    assert code == 2 and "--region: only with --html" in err
    code, _, err = run(capsys, monkeypatch, "decode", qwen, "-", "--html", page, "--region", "0-1100,0-99")
    assert code == 2 and "at most 1,024 rows" in err
    code, _, err = run(capsys, monkeypatch, "decode", qwen, "-", "--html", page, "--layer", "3")
    assert code == 2 and "this model has layers 1-2" in err
    code, _, err = run(capsys, monkeypatch, "decode", qwen, "A dog runs.", "--html", page, "--layer", "1")
    assert code == 2 and "--layer: only above 1,024 prompt tokens" in err
    monkeypatch.setattr("transformer.charts.replay.MAX_REPLAY_BYTES", 1_000_000)
    code, _, err = run(capsys, monkeypatch, "decode", qwen, "-", "--max-steps", "2", "--html", page)
    assert code == 2 and err.count("\n") == 1 and "a replay file holds at most 1 MB" in err
    assert "--max-steps" in err and not page.exists()
