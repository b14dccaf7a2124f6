"""Rooms of the app's state: a feature reads and writes only its own session keys, and hands over to another room
(Decode's step-through, a head's page, another feature) through that room's function, never through its keys."""
from __future__ import annotations

import ast
import functools
import importlib
from types import ModuleType
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import ui.models
from tests.helpers import ROOT
from ui.views.kit import LINK_PARAMS, decode_state

FEATURES = ROOT / "ui" / "views" / "features"


def _named_keys(module: ModuleType) -> set[str]:
    return {v for k, v in vars(module).items() if k.endswith("_KEY") and isinstance(v, str)}


# The rooms a feature hands over to or reads from, and the keys each owns: Decode's step-through (its state
# module), a head's page (its pickers), the statistics over training (the kit's hand-off from the corpus statistics
# to the finder), the sidebar's model picker (ui.models: a feature reads the model it was given, not the picker).
ROOMS = {"decode_state": _named_keys(decode_state), "head page": set(LINK_PARAMS["head"].values()),
         "over_training": _named_keys(importlib.import_module("ui.views.kit.over_training")),
         "the sidebar": _named_keys(ui.models)}


def _is_session_state(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def _key_nodes(tree: ast.AST) -> list[tuple[int, ast.AST, str]]:
    """(line, key expression, "writes" or "reads") of every session-state access in `tree`."""
    found: list[tuple[int, ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_session_state(node.value):
            found.append((node.lineno, node.slice, "reads" if isinstance(node.ctx, ast.Load) else "writes"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and _is_session_state(node.func.value) and node.args):
            if node.func.attr == "update" and isinstance(node.args[0], ast.Dict):
                found += [(node.lineno, k, "writes") for k in node.args[0].keys if k is not None]
            elif node.func.attr in ("setdefault", "pop", "__setitem__", "__delitem__"):
                found.append((node.lineno, node.args[0], "writes"))
            elif node.func.attr in ("get", "__getitem__", "__contains__"):
                found.append((node.lineno, node.args[0], "reads"))
        elif isinstance(node, ast.Compare) and any(_is_session_state(c) for c in node.comparators):
            found.append((node.lineno, node.left, "reads"))
    return found


def session_keys(source: str, namespace: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(line, key, "writes" or "reads") of every session-state key `source` touches whose key can be read from the
    module's names alone (item access, update, setdefault, pop, get, in, del); keys a caller passes in are the
    caller's to choose."""
    keys = []
    for line, expr, how in _key_nodes(ast.parse(source)):
        try:
            value = eval(compile(ast.Expression(expr), "<key>", "eval"), dict(namespace))  # noqa: S307 (our source)
        except Exception:  # a parameter or a local: not known from the module's names
            continue
        if isinstance(value, str):
            keys.append((line, value, how))
    return keys


def _feature(name: str) -> ModuleType:
    return importlib.import_module(f"ui.views.features.{name}")


def own_keys(module: ModuleType) -> set[str]:
    """The keys a feature defines: its module-level `..._KEY` assignments (not the names it imports)."""
    tree = ast.parse((FEATURES / f"{module.__name__.rsplit('.', 1)[-1]}.py").read_text())
    names = {t.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
             for t in (target.elts if isinstance(target, ast.Tuple) else [target])
             if isinstance(t, ast.Name) and t.id.endswith("_KEY")}
    return {vars(module)[n] for n in names if isinstance(vars(module).get(n), str)}


@functools.cache
def _features_keys() -> dict[str, set[str]]:
    return {p.stem: own_keys(_feature(p.stem)) - set().union(*ROOMS.values()) for p in FEATURES.glob("*.py")
            if p.stem != "__init__"}


def foreign_keys(name: str, source: str, namespace: dict[str, Any]) -> list[str]:
    """Keys `source` (the feature `name`) reads or writes that another room owns: a room it hands over to, or
    another feature."""
    owners = {**ROOMS, **{other: keys for other, keys in _features_keys().items() if other != name}}
    return [f"ui/views/features/{name}.py:{line} {how} {key!r}, {room}'s"
            for line, key, how in session_keys(source, namespace)
            for room, keys in owners.items() if key in keys]


@pytest.mark.parametrize("name", sorted(p.stem for p in FEATURES.glob("*.py")
                                        if p.stem != "__init__"))
def test_a_feature_reads_and_writes_only_its_own_session_keys(name: str):
    source = (FEATURES / f"{name}.py").read_text()
    assert foreign_keys(name, source, vars(_feature(name))) == []


@pytest.mark.parametrize("source", [
    "def f():\n    st.session_state[ds.STEP_KEY] = 2\n",
    "def f():\n    st.session_state.update({ds.MODE_KEY: ds.FORCED})\n",
    "def f():\n    st.session_state[LINK_PARAMS['head']['layer']], st.session_state['x'] = 1, 2\n",
    "def f():\n    st.session_state.pop('decode_forced', None)\n",
    "def f():\n    return st.session_state.get(ds.STEP_KEY, 1)\n",
    "def f():\n    return MODEL_KEY in st.session_state\n",
])
def test_the_check_finds_a_feature_touching_another_rooms_key(source: str):
    namespace = {"st": st, "ds": decode_state, "LINK_PARAMS": LINK_PARAMS, "MODEL_KEY": ui.models.MODEL_KEY}
    assert len(foreign_keys("probe", source, namespace)) == 1


def test_the_check_lets_a_feature_write_its_own_and_its_callers_keys():
    source = ("NODE_KEY = 'decode_beam_node'\ndef f(key):\n    st.session_state[NODE_KEY] = 1\n"
              "    st.session_state[key] = 2\n    st.session_state[f'{key}_note'] = 3\n")
    namespace = {"st": st, "NODE_KEY": "decode_beam_node"}
    assert session_keys(source, namespace) == [(3, "decode_beam_node", "writes")]
    assert foreign_keys("beam", source, namespace) == []


def _lens_click(layer: int, step: int) -> None:
    import streamlit as st

    from transformer.charts import LENS_CELL
    from ui.views.features.lens import GRID_KEY, go_to_cell
    if st.button("click", key="click"):
        st.session_state[GRID_KEY] = {"selection": {LENS_CELL: [{"layer": layer, "step": step}]}}
        go_to_cell()


def _beam_hand_off(tokens: tuple[str, ...]) -> None:
    import streamlit as st

    from ui.views.kit import decode_state as ds
    st.button("Decode from here", key="from_here", on_click=ds.decode_from_here, args=("task", "text", tokens))


@pytest.mark.parametrize("layer, step, shown_layer", [(3, 4, 2), (0, 2, None)])
def test_a_click_on_the_lens_grid_shows_its_step_and_layer_in_the_step_through(layer, step, shown_layer):
    """The lens hands over through Decode's `show_step`: the clicked step, and the layer unless the embeddings row."""
    at = AppTest.from_function(_lens_click, args=(layer, step)).run(timeout=30)
    at.button(key="click").click().run(timeout=30)
    assert at.session_state[decode_state.STEP_KEY] == step
    assert (at.session_state[decode_state.LAYER_KEY] if decode_state.LAYER_KEY in at.session_state
            else None) == shown_layer


def test_decode_from_here_forces_the_prefix_and_shows_its_last_step():
    """The beam tree hands over through Decode's `decode_from_here`: the prefix forced, the forced view, its step."""
    tokens = ("a", "b", "c")
    at = AppTest.from_function(_beam_hand_off, args=(tokens,)).run(timeout=30)
    at.button(key="from_here").click().run(timeout=30)
    forced = at.session_state[decode_state.FORCED_KEY]
    assert (forced.task, forced.text, forced.tokens, forced.step) == ("task", "text", tokens, 2)
    assert at.session_state[decode_state.MODE_KEY] == decode_state.FORCED
    assert at.session_state[decode_state.STEP_KEY] == len(tokens)



KIT = ROOT / "ui" / "views" / "kit"


@functools.cache
def kit_users() -> dict[str, set[str]]:
    """Each kit module and the modules that use it (through the kit's face or directly), the kit's own included."""
    face = ast.parse((KIT / "__init__.py").read_text())
    module_of = {alias.asname or alias.name: node.module or alias.name for node in face.body
                 if isinstance(node, ast.ImportFrom) and node.level == 1 for alias in node.names}
    users: dict[str, set[str]] = {p.stem: set() for p in KIT.glob("*.py") if p.stem != "__init__"}
    paths = [*(ROOT / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]
    for path in paths:
        if path == KIT / "__init__.py":
            continue
        user = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            if path.parent == KIT and node.level == 1 and module in users:
                users[module].add(user)
            elif module.endswith("kit") or module == "ui.views":
                for alias in node.names:
                    name = module_of.get(alias.name, alias.name)
                    if name in users:
                        users[name].add(user)
            elif module.split(".")[-1] in users and "kit" in module:
                users[module.split(".")[-1]].add(user)
    return users


def test_no_kit_module_serves_a_single_feature():
    """A feature's own helpers live beside it: a kit module used by one feature and nothing else belongs there."""
    lonely = {name: sorted(who) for name, who in kit_users().items()
              if len(who) == 1 and next(iter(who)).startswith("ui/views/features/")}
    assert lonely == {}


def test_the_kit_check_sees_a_feature_importing_through_the_face():
    users = kit_users()
    assert "ui/views/features/beam.py" in users["decode_state"]
    assert {"ui/views/features/corpus.py", "ui/views/features/head_finder.py"} <= users["over_training"]
