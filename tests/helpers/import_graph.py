"""The import graph of the project's own modules (every import, a function's lazy ones included) and its circles."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT


def module_name(path: Path) -> str:
    """`transformer/decode/greedy.py` -> `transformer.decode.greedy`; a package's `__init__.py` is the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(paths: list[Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (`from .x import y` imports `x`, and `x.y` where that is a module)."""
    modules = {module_name(p): p for p in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                if node.module:  # `from . import x` needs only the submodule x (its package is already loading)
                    targets.add(module)
                targets |= {f"{module}.{alias.name}" for alias in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (`a -> b -> a`, as a list of modules) if the graph has any, else None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for nxt in sorted(graph.get(module, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt] if nxt in path else [*path, module, nxt]
            if nxt not in state and (circle := visit(nxt, [*path, nxt])):
                return circle
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (circle := visit(module, [module])):
            return circle
    return None
