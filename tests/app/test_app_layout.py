"""The app's layout, as tests/test_layout.py keeps the library's: `ui/` by role, arrows one way, no circle.

ui/server -> ui/models -> ui/views -> ui/links -> ui/train -> ui/shell -> pages/ and app.py: a subpackage imports only
the subpackages before it, and only through their faces (`from ui.views import show_chart`); inside a subpackage,
modules import their siblings relatively. Pages and app.py import the library's stages through their faces too (the
command line's arrows are kept by tests/library/test_layout.py); the library never imports `ui/`. `studio_browser/`
(the app driven in Chromium, for the browser tests and the benchmarks) imports the app through faces too, and nothing
in the app imports it.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tests.helpers.import_graph import find_circle, import_graph
from tests.helpers import ROOT

# Data and calls flow down this list; a role may import the roles before it, never one after it.
ROLES = ("server", "models", "views", "links", "train", "shell")
STAGES = ("model", "data", "decode", "analysis", "store", "train", "charts")


def _imports(path: Path, source: str) -> list[tuple[int, str, int]]:
    """(line, module, level) of every import; `from ui import views` counts as importing the module ui.views, and
    a library module's one-dot imports are resolved (`from .decode import x` in transformer/notebook.py:
    transformer.decode)."""
    in_library = path.relative_to(ROOT).parts[0] == "transformer"
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module, level = node.module or "", node.level
            if in_library and level == 1:
                module, level = ".".join(filter(None, ("transformer", module))), 0
            if module in ("ui", "transformer") and not level:
                found += [(node.lineno, f"{module}.{alias.name}", 0) for alias in node.names]
            else:
                found.append((node.lineno, module, level))
    return found


def app_violations(path: Path, source: str) -> list[str]:
    """What in `source` (the text of `path`, a file of ui/, pages/, app.py or studio_browser/)
    breaks the layout."""
    rel = path.relative_to(ROOT)
    role = rel.parts[1] if rel.parts[0] == "ui" and len(rel.parts) >= 3 else None
    depth = len(rel.parts) - 2  # how far up a relative import may reach and stay inside the role (ui/views/kit/x.py: 2)
    driver = rel.parts[0] == "studio_browser"
    problems = []
    for line, module, level in _imports(path, source):
        where = f"{rel}:{line} imports {'.' * level}{module}"
        names = module.split(".")
        if level:
            if (role is None and not driver) or level > (depth if role else 1):
                problems.append(f"{where}: only modules of one ui/ role (or of studio_browser) import each other "
                                "relatively")
            continue
        if names[0] == "studio_browser" and not driver:
            problems.append(f"{where}: the app never imports the browser driver (the tests' and benchmarks')")
        if names[0] == "ui":
            if rel.parts[0] == "transformer":
                problems.append(f"{where}: the library never imports the app")
            elif len(names) != 2 or names[1] not in ROLES:
                problems.append(f"{where}: import a role through its face (ui.{'|'.join(ROLES)})")
            elif role is not None and ROLES.index(names[1]) >= ROLES.index(role):
                problems.append(f"{where}: ui/{role} may import only {', '.join(ROLES[:ROLES.index(role)]) or 'no role'}")
        elif (names[0] == "transformer" and len(names) > 2 and names[1] in STAGES
              and not (rel.parts[0] == "transformer" and len(rel.parts) > 2)):
            problems.append(f"{where}: import the library through a stage's face (transformer.{names[1]})")
    return problems


def _app_files() -> list[Path]:
    return sorted([*(ROOT / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py",
                   *(ROOT / "studio_browser").glob("*.py")])


def test_every_role_is_a_folder_with_a_public_face():
    assert {p.name for p in (ROOT / "ui").iterdir() if p.is_dir() and p.name != "__pycache__"} == set(ROLES)
    assert sorted(p.name for p in (ROOT / "ui").glob("*.py")) == ["__init__.py"]
    for role in ROLES:
        init = ROOT / "ui" / role / "__init__.py"
        assert "__all__" in init.read_text(), f"{init} must list the role's public names in __all__"


@pytest.mark.parametrize("path", _app_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_app_imports_run_one_way_through_faces(path: Path):
    assert app_violations(path, path.read_text()) == []


def test_the_app_has_no_import_circle():
    """No module of the app (ui/, pages/, app.py) or the library imports one that imports it back, lazily or not."""
    paths = [*_app_files(), *(ROOT / "transformer").rglob("*.py")]
    circle = find_circle(import_graph(sorted(set(paths))))
    assert circle is None, "import circle: " + " -> ".join(circle or ())


@pytest.mark.parametrize("where, source", [
    ("ui/server/probe.py", "from ui.models import current_model\n"),
    ("ui/views/probe.py", "from ui.links import presenting\n"),
    ("ui/views/probe.py", "from ui.models.catalog import resolve\n"),
    ("pages/probe.py", "from ui.views.kit.widgets import md\n"),
    ("transformer/decode/probe.py", "from ui.views import md\n"),
    ("pages/probe.py", "from .home import x\n"),
    ("ui/shell/probe.py", "from studio_browser import running_app\n"),
    ("studio_browser/probe.py", "from ui.shell.local_server import free_port\n"),
])
def test_the_check_finds_a_wrong_import(where: str, source: str):
    assert app_violations(ROOT / where, source)


def test_the_check_allows_downward_face_and_sibling_imports():
    source = "from ui.models import current_model\nfrom ui.server import LIMITS\nfrom .widgets import md\n"
    assert app_violations(ROOT / "ui/views/probe.py", source) == []


def test_every_registered_page_has_its_script_and_its_link_table():
    """The page registry is the one list: each entry has its script in pages/ and its row in the link table, and
    pages/ holds no page the registry does not list."""
    from ui.links.url_state import PAGE_WIDGETS
    from ui.server import PAGES
    assert {p.name for p in PAGES} == {p.stem for p in (ROOT / "pages").glob("*.py")} == set(PAGE_WIDGETS)
    assert sum(p.default for p in PAGES) == 1


def test_every_page_runs_in_the_frame():
    """Each page script calls `ensure_frame()` before it draws (ui/shell/frame.py says why)."""
    from ui.server import PAGES
    for page in PAGES:
        source = (ROOT / page.path).read_text()
        assert "ensure_frame()" in source and source.index("ensure_frame()") < source.index("st.title("), page.path
