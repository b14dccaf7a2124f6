"""The library's layout: stages import only stages below them, the command line (`transformer/cli/`) may import every
stage through its face and no stage imports it, and nothing in `transformer/` imports Streamlit or the app."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.import_graph import find_circle, import_graph

PACKAGE = ROOT / "transformer"
# Data flows down this list; a stage may import the stages before it, never one after it.
STAGES = ("model", "data", "adapters", "decode", "analysis", "store", "train", "dictionaries", "charts")
CLI = "cli"  # the command line: above every stage, one module per command (tests/cli/test_registry.py)
APP = ("ui", "pages", "app", "studio_browser")


def _imported_modules(path: Path, source: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in `source` (the text of `path`), relative imports resolved."""
    package = ["transformer", *path.relative_to(PACKAGE).parts[:-1]]
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module))
            if not node.module:  # `from . import x`, `from .. import x`: the names are modules
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def layout_violations(path: Path, source: str) -> list[str]:
    """What in `source` breaks the layout: Streamlit or the app imported, a stage importing a later stage or the
    command line, the command line reaching past a stage's face."""
    parts = path.relative_to(PACKAGE).parts
    stage = parts[0] if len(parts) > 1 else None
    problems = []
    for line, module in _imported_modules(path, source):
        where = f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
        names = module.split(".")
        if names[0] == "streamlit":
            problems.append(f"{where}: the library never imports Streamlit")
        if names[0] in APP:
            problems.append(f"{where}: the library never imports the app")
        if stage is None or names[0] != "transformer" or len(names) < 2:
            continue
        if stage == CLI:
            if names[1] in STAGES and len(names) > 2:
                problems.append(f"{where}: the command line imports a stage through its face (transformer.{names[1]})")
        elif names[1] in (CLI, "__main__"):
            problems.append(f"{where}: a stage never imports the command line")
        elif names[1] in STAGES and STAGES.index(names[1]) > STAGES.index(stage):
            problems.append(f"{where}: {stage}/ may import only {', '.join(STAGES[:STAGES.index(stage) + 1])}")
    return problems


def test_every_stage_is_a_folder_with_a_public_face():
    """The folders of `transformer/` are the stages and the command line, each with its `__all__`."""
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == {*STAGES, CLI}
    for stage in (*STAGES, CLI):
        init = PACKAGE / stage / "__init__.py"
        assert "__all__" in init.read_text(), f"{init} must list the stage's public names in __all__"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_down_the_stages_and_never_reach_streamlit(path: Path):
    assert layout_violations(path, path.read_text()) == []


@pytest.mark.parametrize("stage, source", [
    ("model", "from ..train import Trainer\n"),
    ("store", "def f():\n    from ..train import trainer\n"),
    ("decode", "from transformer.charts import attention_heatmap\n"),
    ("data", "from .. import analysis\n"),
    ("charts", "import streamlit as st\n"),
    ("train", "from ..cli import main\n"),
    ("train", "from ..cli.common import UsageError\n"),
    ("charts", "from transformer.cli import main\n"),
    ("decode", "from ui.views import md\n"),
    ("cli", "from ..decode.greedy import greedy_decode\n"),
    ("cli", "from transformer.analysis.patching.ablation import parse_head\n"),
])
def test_the_check_finds_an_upward_import(stage: str, source: str):
    assert layout_violations(PACKAGE / stage / "probe.py", source)


def test_the_check_allows_downward_and_sibling_imports():
    source = "from ..model import ModelConfig\nfrom .trainer import Trainer\nfrom ..decode import eval_mode\n"
    assert layout_violations(PACKAGE / "train" / "probe.py", source) == []


def test_the_command_line_may_import_every_stage_and_its_own_modules():
    source = "".join(f"from ..{stage} import x\n" for stage in STAGES) + "from .common import UsageError\n"
    assert layout_violations(PACKAGE / CLI / "probe.py", source) == []


def test_the_library_has_no_import_circle():
    """No module of the library imports, directly or through others (lazy imports included), one that imports it."""
    circle = find_circle(import_graph(sorted(PACKAGE.rglob("*.py"))))
    assert circle is None, "import circle: " + " -> ".join(circle or ())


def test_the_circle_check_finds_a_circle():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


ADAPTER_CLASSES = {"NativeSeq2Seq", "NativeDecoderOnly", "HFSeq2Seq", "HFCausalLM"}


def test_only_the_adapter_stage_builds_an_adapter():
    """Outside `transformer/adapters` (tests aside) an adapter comes from `adapter_for` or `load_hf_model`, never from
    its class: one place picks the family's adapter."""
    root = PACKAGE.parent
    paths = [*PACKAGE.rglob("*.py"), *(root / "ui").rglob("*.py"), *(root / "pages").glob("*.py"), root / "app.py",
             *(root / "bench").rglob("*.py")]
    built = []
    for path in paths:
        if path.is_relative_to(PACKAGE / "adapters"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in ADAPTER_CLASSES:
                    built.append(f"{path.relative_to(root)}:{node.lineno} builds {name}")
    assert built == []


CHARTS = PACKAGE / "charts"
ALTAIR_BUILDERS = {"Chart", "LayerChart", "HConcatChart", "VConcatChart", "ConcatChart", "FacetChart", "RepeatChart",
                   "layer", "hconcat", "vconcat", "concat", "repeat"}


def figures_built(source: str) -> list[int]:
    """Lines of `source` that build an Altair chart (alt.Chart, alt.layer, …) or any Plotly figure (plotly's
    graph_objects, express or make_subplots), however the package was imported."""
    tree = ast.parse(source)
    altair, plotly, direct = set(), set(), set()  # names bound to the packages; builders imported by name
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if alias.name.split(".")[0] == "altair":
                    altair.add(bound)
                elif alias.name.split(".")[0] == "plotly":
                    plotly.add(bound)
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            for alias in node.names:
                name = alias.asname or alias.name
                if root == "altair" and alias.name in ALTAIR_BUILDERS or root == "plotly":
                    direct.add(name)
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, chain = node.func, []
        while isinstance(func, ast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            continue
        if (func.id in altair and chain and chain[0] in ALTAIR_BUILDERS or func.id in plotly and chain
                or func.id in direct):
            lines.append(node.lineno)
    return lines


def test_figures_are_built_only_in_the_charts_stage():
    """No Altair or Plotly figure is built outside `transformer/charts/`: the app, the CLI and the notebook draw
    through its builders, so every figure is reachable from each of them."""
    root = PACKAGE.parent
    paths = [*PACKAGE.rglob("*.py"), *(root / "ui").rglob("*.py"), *(root / "pages").glob("*.py"), root / "app.py",
             *(root / "bench").rglob("*.py"), *(root / "studio_browser").rglob("*.py")]
    built = [f"{path.relative_to(root)}:{line}" for path in paths
             if not path.is_relative_to(CHARTS)
             and ("altair" in (text := path.read_text()) or "plotly" in text)  # no import of either: nothing to parse
             for line in figures_built(text)]
    assert built == [], "figures built outside transformer/charts/: " + ", ".join(built)


@pytest.mark.parametrize("source", [
    "import altair as alt\nc = alt.Chart(df).mark_bar()\n",
    "import altair as alt\nc = alt.layer(a, b)\n",
    "import altair\nc = altair.vconcat(a, b)\n",
    "from altair import Chart\nc = Chart(df)\n",
    "import plotly.graph_objects as go\nf = go.Figure()\n",
    "from plotly.subplots import make_subplots\nf = make_subplots(rows=2)\n",
    "import plotly.express as px\nf = px.imshow(m)\n",
])
def test_the_figure_check_finds_a_chart(source: str):
    assert figures_built(source) == [2]


def test_the_figure_check_allows_reading_and_showing_charts():
    source = ("import altair as alt\nimport streamlit as st\nalt.utils.schemapi.disable_debug_mode()\n"
              "def f(c: alt.Chart) -> alt.X:\n    st.altair_chart(c)\n    return alt.X('x:Q')\n")
    assert figures_built(source) == []
