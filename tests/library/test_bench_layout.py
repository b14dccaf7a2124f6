"""The benchmarks' layout: folders by what is measured, every module in the quick or the long set, shared code only
in `bench/common`, and the README's table naming modules that exist."""
from __future__ import annotations

import ast
import re

from bench.__main__ import FOLDERS, benchmarks, main
from tests.helpers import ROOT

BENCH = ROOT / "bench"


def test_the_bench_root_holds_only_the_runner_and_folders_by_what_is_measured():
    assert sorted(p.name for p in BENCH.glob("*.py")) == ["__init__.py", "__main__.py"]
    folders = {p.name for p in BENCH.iterdir() if p.is_dir() and p.name not in ("__pycache__", "out")}
    assert folders == {*FOLDERS, "common"}
    assert all((BENCH / folder / "__init__.py").is_file() for folder in folders)


def test_every_benchmark_is_quick_or_long_and_the_list_names_it(capsys):
    found = benchmarks()
    modules = {f"bench.{p.parent.name}.{p.stem}" for folder in FOLDERS for p in (BENCH / folder).glob("*.py")
               if p.name != "__init__.py"}
    assert set(found) == modules
    assert main(["--list"]) == 0
    listed = capsys.readouterr().out
    for name in found:
        folder, stem = name.split(".")[1:]
        line = next(x for x in listed.splitlines() if x.startswith(f"{folder}/"))
        part = line.split("long:")[1] if found[name] else line.split("long:")[0]
        assert stem in part.split(), name


def test_a_benchmark_imports_only_its_own_folder_and_common():
    crossing = []
    for folder in FOLDERS:
        for path in (BENCH / folder).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench."):
                    other = node.module.split(".")[1]
                    if other not in (folder, "common"):
                        crossing.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}")
    assert crossing == []


def test_the_readme_table_names_modules_that_exist():
    rows = re.findall(r"^\| `([a-z_]+/[a-z0-9_]+)` \|", (BENCH / "README.md").read_text(), re.MULTILINE)
    assert rows
    assert [r for r in rows if not (BENCH / f"{r}.py").is_file()] == []
