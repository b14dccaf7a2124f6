"""The app's layout, as tests/library/test_layout.py keeps the library's: `ui/` by role, arrows one way, no circle.

ui/server -> ui/models -> ui/views -> ui/links -> ui/train -> ui/shell -> pages/ and app.py: a subpackage imports only
the subpackages before it, and only through their faces (`from ui.views import show_chart`); inside a subpackage,
modules import their siblings relatively. Pages and app.py import the library's stages through their faces too (the
command line's arrows are kept by tests/library/test_layout.py); the library never imports `ui/`. `studio_browser/`
(the app driven in Chromium, for the browser tests and the benchmarks) imports the app through faces too, and nothing
in the app imports it.

Inside `ui/views/`, rooms: kit -> features -> assembly. The kit (widgets, chart cache, background jobs, the Selection
record and the link table, cached decodes, ...) imports no feature and no assembly; a feature imports the kit and the
library, never another feature (FEATURE_EXCEPTIONS names the pairs allowed: none); the assembly (what builds a page's
Selection and lays its views out) imports features and the kit. A room imports another through its face (`from ..kit
import md`), never through `ui/views/__init__.py`, which is the face the rest of the app imports. The pages (`pages/`,
app.py) place only assembly and kit names.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.import_graph import find_circle, import_graph

# Data and calls flow down this list; a role may import the roles before it, never one after it.
ROLES = ("server", "models", "views", "links", "train", "shell")
STAGES = ("model", "data", "decode", "analysis", "store", "train", "dictionaries", "charts")


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
    depth = len(rel.parts) - 2  # how far a relative import may reach up inside the role (ui/views/kit/*.py: 2)
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
                allowed = ", ".join(ROLES[:ROLES.index(role)]) or "no role"
                problems.append(f"{where}: ui/{role} may import only {allowed}")
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


# The rooms of ui/views/.
VIEWS = ROOT / "ui" / "views"
# A room may import the rooms before it, never one after it.
ROOMS = ("kit", "features", "assembly")
# (feature, another feature it may import); add one only where the shared piece cannot move into the kit.
FEATURE_EXCEPTIONS: frozenset[tuple[str, str]] = frozenset()
PAGE_ROOMS = ("kit", "assembly")  # the rooms whose names pages/ and app.py may import


def _view_imports(path: Path, source: str) -> list[tuple[int, str, list[str], int]]:
    """(line, absolute module, names, level) of every import in `source`, a function's lazy ones included."""
    rel = path.relative_to(ROOT)
    package = list(rel.parts[:-1])
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, [], 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module, [alias.name for alias in node.names], node.level))
    return found


def _face_rooms() -> dict[str, str]:
    """Each name of the views' face (ui/views/__init__.py) -> the room it comes from."""
    rooms = {}
    for node in ast.parse((VIEWS / "__init__.py").read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in ROOMS:
            rooms |= {alias.asname or alias.name: node.module for alias in node.names}
    return rooms


def room_violations(path: Path, source: str) -> list[str]:
    """What in `source` (the text of `path`: a file of ui/views/, pages/ or app.py) breaks the rooms' order."""
    rel = path.relative_to(ROOT)
    if rel.parts[0] == "pages" or rel == Path("app.py"):
        return _page_violations(rel, source)
    if rel.parts[:2] != ("ui", "views") or rel == Path("ui/views/__init__.py"):
        return []
    if len(rel.parts) != 4 or rel.parts[2] not in ROOMS:
        return [f"{rel}: every view lives in a room (ui/views/{'|'.join(ROOMS)}/)"]
    room, module = rel.parts[2], rel.stem
    problems = []
    for line, target, names, level in _view_imports(path, source):
        parts = target.split(".")
        if parts[:2] != ["ui", "views"]:
            continue
        where = f"{rel}:{line} imports {target}"
        other = parts[2] if len(parts) > 2 else None
        if not level:
            problems.append(f"{where}: views import each other relatively (from ..kit import x)")
        elif other not in ROOMS:
            problems.append(f"{where}: import the room a name lives in (ui.views.{'|'.join(ROOMS)}), not the views' "
                            "face")
        elif ROOMS.index(other) > ROOMS.index(room):
            problems.append(f"{where}: ui/views/{room} may import only {', '.join(ROOMS[:ROOMS.index(room)])} "
                            "and its own room" if room != "kit" else f"{where}: the kit imports no other room")
        elif other != room and len(parts) > 3:
            problems.append(f"{where}: import another room through its face (ui.views.{other})")
        elif other == room == "features" and module != "__init__":
            reached = [parts[3]] if len(parts) > 3 else names  # `from .lens import x`; `from . import lens`
            problems += [f"{where}: a feature imports no other feature ({module} -> {feature})"
                         for feature in reached if feature != module and (module, feature) not in FEATURE_EXCEPTIONS]
    return problems


def _page_violations(rel: Path, source: str) -> list[str]:
    rooms = _face_rooms()
    problems = []
    for line, target, names, _ in _view_imports(ROOT / rel, source):
        if target != "ui.views":
            continue
        problems += [f"{rel}:{line} imports {name} from ui/views/{rooms[name]}: a page places only "
                     f"{' and '.join(PAGE_ROOMS)} names (a feature is placed by its page's assembly)"
                     for name in names if rooms.get(name, "assembly") not in PAGE_ROOMS]
    return problems


def _view_files() -> list[Path]:
    return sorted([*VIEWS.rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"])


def test_every_view_lives_in_a_room_with_a_public_face():
    assert {p.name for p in VIEWS.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(ROOMS)
    assert sorted(p.name for p in VIEWS.glob("*.py")) == ["__init__.py"]
    for room in ROOMS:
        init = VIEWS / room / "__init__.py"
        assert "__all__" in init.read_text(), f"{init} must list the room's public names in __all__"


@pytest.mark.parametrize("path", _view_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_views_import_down_the_rooms(path: Path):
    assert room_violations(path, path.read_text()) == []


@pytest.mark.parametrize("where, source", [
    ("ui/views/kit/probe.py", "from ..features import show_sweep\n"),
    ("ui/views/kit/probe.py", "def f():\n    from ..assembly import home_selection\n"),
    ("ui/views/features/probe.py", "from ..assembly import model_caption\n"),
    ("ui/views/features/probe.py", "from .lens import show_step_lens\n"),
    ("ui/views/features/probe.py", "from . import lens\n"),
    ("ui/views/features/probe.py", "from ..kit.widgets import md\n"),
    ("ui/views/assembly/probe.py", "from .. import show_sweep\n"),
    ("ui/views/assembly/probe.py", "from ui.views.features import show_sweep\n"),
    ("ui/views/probe.py", "from .kit import md\n"),
    ("pages/probe.py", "from ui.views import show_beam_tree\n"),
])
def test_the_rooms_check_finds_a_wrong_import(where: str, source: str):
    assert room_violations(ROOT / where, source)


def test_the_rooms_check_allows_downward_face_and_sibling_imports():
    assembly = "from ..features import show_sweep\nfrom ..kit import md\nfrom .compare import pick_model_b\n"
    assert room_violations(ROOT / "ui/views/assembly/probe.py", assembly) == []
    feature = "from ..kit import decode_state, md\nfrom transformer.decode import greedy_decode\n"
    assert room_violations(ROOT / "ui/views/features/probe.py", feature) == []
    kit = "from .widgets import md\nfrom . import decode_state\n"
    assert room_violations(ROOT / "ui/views/kit/probe.py", kit) == []
    assert room_violations(ROOT / "pages/probe.py", "from ui.views import md, show_attention_views\n") == []
