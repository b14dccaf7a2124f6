"""The notebook API (`transformer.notebook`): the app's charts for a model and a sentence, drawn with no network, the
trace as data, the command line's one-line errors, and the tour notebook executed headlessly."""
from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import traceback
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import ROOT
from transformer import cli
from transformer.adapters import HFModelError
from transformer.charts import INLINE_RENDERER, enable_inline_renderer, read_inline_chart
from transformer.decode import STORE_ABOVE, InputError
from transformer.notebook import decode, frame, load, show, trace

REVERSE = ROOT / "checkpoints" / "reverse"
TOUR = ROOT / "examples" / "tour.ipynb"
# what fetches a script or a stylesheet from elsewhere: <script src>, <link href>, a CDN, require.js, import()
REMOTE_LOAD = re.compile(r"""<script\b[^>]*\bsrc\s*=\s*["']?(?:https?:)?//"""
                         r"""|<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?//"""
                         r"""|cdn\.jsdelivr\.net|unpkg\.com|cdnjs\.|\brequire(?:js)?\.config\s*\("""
                         r"""|["'](?:https?:)?//[^"'\s]+\.js["']|\bimport\s*\(\s*["'](?:https?:)?//""", re.IGNORECASE)
MAX_TOUR_BYTES = 2_500_000  # the executed tour: three charts of ~0.4 MB of Vega each, their data, two tables


@pytest.fixture(scope="module")
def reversal():
    """The shipped reversal model's greedy decode of one word."""
    return decode(str(REVERSE), "attention")


def _layers_data(chart) -> list[pd.DataFrame]:
    """The data each layer of a layered chart draws (its own, or the chart's shared data)."""
    return [layer.data if isinstance(layer.data, pd.DataFrame) else chart.data for layer in chart.layer]


def _slider(spec: dict) -> dict:
    """The step slider among a chart's parameters (the others carry the token labels as data)."""
    (slider,) = [p for p in spec["params"] if "bind" in p]
    return slider


def test_the_step_view_has_a_slider_over_every_step_showing_that_steps_weights(reversal):
    chart = show(reversal, step=3)
    spec = chart.to_dict()
    slider = _slider(spec)
    assert slider["bind"]["input"] == "range" and slider["bind"]["max"] == len(reversal.steps)
    assert slider["value"] == 3
    heading, _, strip, heat = chart.vconcat
    lines = heading.data.set_index("step")["line"]
    assert lines[2].startswith(f"Step 2 of {len(reversal.steps)}: input ‹")
    last = reversal.trace.n_layers("cross") - 1
    cross = reversal.trace.matrix("cross", last)  # mean of heads
    data = _layers_data(strip)[0]
    for step in (1, len(reversal.steps)):
        shown = data[data["step"] == step].sort_values("position")["weight"].to_numpy()
        assert shown == pytest.approx(cross[step - 1].numpy(), abs=1e-6)
    rows = _layers_data(heat)[0]
    assert rows[rows["step"] == 2]["query_index"].max() == 1  # the map shows the rows up to the step


def test_a_heads_map_and_the_grid_of_a_kind(reversal):
    head = show(reversal, view="head", kind="encoder_self", layer=0, head=1).to_dict()
    assert "head 2" in json.dumps(head["title"])
    grid = show(reversal, view="grid", kind="cross").to_dict()
    panels = grid["facet"]["sort"]
    assert len(panels) == reversal.trace.n_layers("cross") * (reversal.trace.n_heads + 1)


def test_the_trace_as_a_tidy_frame_that_pandas_can_group(reversal):
    t = trace(str(REVERSE), "attention")
    assert t.source_tokens == reversal.trace.source_tokens
    df = frame(t)
    assert set(df["kind"]) == {"encoder_self", "decoder_self", "cross"}
    row_sums = df.groupby(["kind", "layer", "head", "query_index"])["weight"].sum()
    assert row_sums.to_numpy() == pytest.approx(1.0, abs=1e-4)  # every query's weights are a distribution
    assert len(frame(reversal, kind="cross", layer=0, head=0)) == len(t.decoder_input_tokens) * len(t.source_tokens)


def test_a_hugging_face_folder_opens_as_in_the_app(tmp_path):
    from tests.helpers.hf_tiny_models import build
    folder = build("marian", tmp_path / "marian")
    chart = show(str(folder), "the dog runs")
    assert _slider(chart.to_dict())["bind"]["input"] == "range"
    assert not frame(str(folder), "the dog runs", kind="cross").empty


@pytest.mark.slow  # a 1,300-token prompt through the store and generate: seconds
def test_a_document_decodes_with_the_store_as_generate_does_and_keep_store_asks_for_it_at_any_length(tmp_path):
    import torch

    from tests.helpers.hf_causal_models import SIZE, lines
    from tests.helpers.hf_causal_models import build as build_causal
    folder = build_causal("qwen2", tmp_path / "qwen2", size={**SIZE, "positions": 2048})
    text = "\n".join(lines(32))  # ~1,300 tokens: past STORE_ABOVE
    long = decode(str(folder), text, max_steps=3)
    adapter = load(str(folder))
    ids = torch.tensor([adapter.decoder_prefix(adapter.tokenize_source(text))])
    assert long.trace.store is not None and ids.shape[1] > STORE_ABOVE
    with adapter.running():
        want = adapter.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=3)
    assert [s.token_id for s in long.steps] == want[0, ids.shape[1]:].tolist()
    short = decode(adapter, "A dog runs.", max_steps=3), decode(adapter, "A dog runs.", max_steps=3, keep="store")
    assert short[0].trace.store is None and short[1].trace.store is not None
    assert short[0].output_text == short[1].output_text
    with pytest.raises(InputError, match="keep must be one of auto, maps, store"):
        decode(adapter, text, keep="everything")


def test_a_heads_map_of_a_decode_kept_as_a_store_is_its_overview_and_a_region_its_exact_weights(tmp_path,
                                                                                               monkeypatch):
    import importlib

    import torch

    from tests.helpers.hf_causal_models import build as build_causal
    from tests.helpers.hf_causal_models import lines
    from transformer.analysis import summarise_layer
    folder = str(build_causal("qwen2", tmp_path / "qwen2"))
    text = "\n".join(lines(8))  # a few hundred tokens
    kept, maps = decode(folder, text, max_steps=2, keep="store"), decode(folder, text, max_steps=2, keep="maps")
    store = kept.trace.store
    n = store.layer("self", 1).n_keys
    overview = show(kept, view="head", kind="self", layer=1, head=2)  # the map's overview mode
    cells = _layers_data(overview)[0]
    want = summarise_layer(store, "self", 1, resolution=96, heads=[2]).overview[0]
    assert len(cells) == want.numel() and cells["row_end"].max() == n
    torch.testing.assert_close(torch.tensor(cells["weight"].to_numpy()).view_as(want), want.double(), atol=1e-6,
                               rtol=0)
    region = ((n - 40, n), (n - 60, n))
    zooms = [show(r, view="head", kind="self", layer=1, head=2, region=region).data for r in (kept, maps)]
    exact = store.tile("self", 1, 2, slice(n - 40, n), slice(n - 60, n))
    for zoom in zooms:  # through the store and through the maps: the region's exact weights, tokens on the axes
        drawn = zoom.sort_values(["row", "key"])
        assert {"row_token", "key_token"} <= set(zoom.columns)
        torch.testing.assert_close(torch.tensor(drawn["weight"].to_numpy()).view(40, 60), exact.double(), atol=1e-6,
                                   rtol=0)
    assert _layers_data(show(maps, view="head", kind="self", layer=1, head=2))[0]["weight"].size == n * n  # every cell
    with pytest.raises(ValueError, match="outside the input"):
        show(kept, view="head", kind="self", layer=1, head=2, region=((0, n + 1), (0, 5)))
    monkeypatch.setattr(importlib.import_module("transformer.analysis.source.attention_source"), "WHOLE_MAPS_BYTES", 0)
    with pytest.raises(ValueError, match="model-view grid of every head reads every weight"):
        show(kept, view="grid", kind="self")


def _cli_error(*args: str) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["decode", *args]) == 2
    return err.getvalue().strip().removeprefix("error: ")


def _pickle_only(folder: Path) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "marian"}))
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    return folder


@pytest.mark.parametrize("case", ["missing path", "pickle-only folder", "empty sentence"])
def test_a_users_mistake_raises_the_command_lines_one_line_error(case: str, tmp_path: Path):
    model, text, error = {"missing path": (str(tmp_path / "no-such-model"), "hi", HFModelError),
                          "pickle-only folder": (None, "hi", HFModelError),
                          "empty sentence": (str(REVERSE), "  ", InputError)}[case]
    model = model or str(_pickle_only(tmp_path / "pickled"))
    with pytest.raises(error) as caught:
        show(model, text)
    message = str(caught.value)
    assert "\n" not in message and message == _cli_error(model, text)
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert all(Path(f.filename).name in ("test_notebook.py", "notebook.py", "python_api.py", "raises.py")
               for f in frames), [f.filename for f in frames]  # nothing from deep inside the library


def test_a_layer_or_head_the_model_lacks_is_a_value_error_naming_the_range(reversal):
    with pytest.raises(ValueError, match=r"layer 7 does not exist"):
        show(reversal, view="head", layer=7)
    with pytest.raises(ValueError, match=r"head 9 does not exist"):
        show(reversal, head=9)
    with pytest.raises(ValueError, match="unknown view"):
        show(reversal, view="table")


def _remote_loads(text: str) -> list[str]:
    return [m.group() for m in REMOTE_LOAD.finditer(text)]


def _output_text(output: dict) -> str:
    """Everything a notebook output shows, as text: each mimetype's data, a stream's text."""
    data = [v if isinstance(v, str) else "".join(v) if isinstance(v, list) else json.dumps(v)
            for v in output.get("data", {}).values()]
    return "\n".join([*data, output.get("text", "")])


def test_a_chart_carries_vega_in_its_output_and_names_no_remote_script(reversal):
    import altair as alt
    import vl_convert
    assert alt.renderers.active == INLINE_RENDERER  # importing transformer.notebook chose it
    output = show(reversal)._repr_mimebundle_()
    assert list(output) == ["text/html"] and _remote_loads(output["text/html"]) == []
    spec, options, vega = read_inline_chart(output["text/html"])
    assert _slider(spec)["bind"]["input"] == "range" and options["mode"] == "vega-lite"
    assert "window.attentionStudioVegaEmbed=" in vega and vl_convert.get_vega_version() in vega
    assert _remote_loads(vega) == []  # nor does the library itself load anything


def test_a_renderer_the_user_chose_before_is_kept():
    import altair as alt
    with alt.renderers.enable("mimetype"):
        assert not enable_inline_renderer() and alt.renderers.active == "mimetype"
    assert alt.renderers.active == INLINE_RENDERER


def test_the_remote_script_check_catches_altairs_own_html(reversal):
    import altair as alt
    with alt.renderers.enable("html"):  # Altair's default: vega, vega-lite and vega-embed from a CDN
        assert _remote_loads(show(reversal, view="head")._repr_mimebundle_()["text/html"])


def test_load_passes_an_opened_model_through(reversal):
    model = load(str(REVERSE))
    assert load(model) is model
    assert decode(model, "attention").output_text == reversal.output_text


def test_the_notebook_api_does_not_import_streamlit():
    code = "import sys, transformer.notebook; print('streamlit' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr[-2000:]


def _charts_in(outputs: list) -> list[tuple[dict, str]]:
    """The (spec, inlined JavaScript) of each chart a cell's outputs draw."""
    return [read_inline_chart(o["data"]["text/html"])[::2] for o in outputs
            if "attention-studio-chart-" in o.get("data", {}).get("text/html", "")]


@pytest.mark.slow
def test_the_tour_notebook_runs_and_draws_its_charts():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(TOUR, as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(TOUR.parent)}}).execute()  # raises if a cell errors
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    errors = [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert errors == []
    charts = {cell.source.strip(): _charts_in(cell.outputs) for cell in code if cell.source.startswith("show(")}
    assert len(charts) == 3 and all(len(found) == 1 for found in charts.values()), charts.keys()
    assert _slider(charts["show(result)"][0][0])["bind"]["input"] == "range"
    assert all("window.attentionStudioVegaEmbed=" in vega for ((_, vega),) in charts.values())  # Vega, inlined
    remote = [(cell.source[:40], hit) for cell in code for o in cell.outputs
              for hit in _remote_loads(_output_text(o))]
    assert remote == []  # offline every chart draws: no output loads a script from the network
    assert len(nbformat.writes(notebook).encode()) < MAX_TOUR_BYTES
    tables = [o for cell in code for o in cell.outputs if "text/html" in o.get("data", {})
              and "<table" in o["data"]["text/html"]]
    assert len(tables) == 2  # df.head() and the groupby


# a notebook puts each output's HTML into one page and runs its scripts, as JupyterLab does (a script set as
# innerHTML does not run; a new script element with the same text does)
JUPYTER_PAGE = """<!DOCTYPE html><html><body><script>
for (const html of %s) {
  const output = document.body.appendChild(document.createElement("div"));
  output.innerHTML = html;
  for (const old of output.querySelectorAll("script")) {
    const script = document.createElement("script");
    script.textContent = old.textContent;
    old.replaceWith(script);
  }
}
</script></body></html>"""


@pytest.mark.browser
def test_notebook_charts_draw_offline_and_the_step_slider_moves_in_a_browser(reversal, tmp_path: Path):
    from studio_browser import CHROMIUM, launch_chromium
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    outputs = [show(reversal, view=view)._repr_mimebundle_()["text/html"] for view in ("step", "head", "grid")]
    page_file = tmp_path / "notebook.html"
    page_file.write_text(JUPYTER_PAGE % json.dumps(outputs).replace("</", "<\\/"))
    n = len(reversal.steps)
    heading = "s => [...document.querySelectorAll('svg text')].some(t => t.textContent.startsWith(s))"
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page()
            requests: list[str] = []
            page.route("**/*", lambda route: (requests.append(route.request.url), route.abort()
                                              if route.request.url.startswith("http") else route.continue_()))
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(page_file.as_uri())
            page.wait_for_function(heading, arg=f"Step 1 of {n}:", timeout=30_000)
            page.wait_for_function("() => document.querySelectorAll('.vega-embed svg.marks').length === 3",
                                   timeout=10_000)  # every chart on the page draws, not only the first
            page.fill("input[type=range]", str(n))
            page.dispatch_event("input[type=range]", "input")
            page.wait_for_function(heading, arg=f"Step {n} of {n}:", timeout=10_000)
            assert not page.evaluate(heading, f"Step 1 of {n}:")
            assert errors == [] and requests == [page_file.as_uri()]  # nothing asked of the network
        finally:
            browser.close()
