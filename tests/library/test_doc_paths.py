"""Every module a pointer names exists: the paths (`transformer/adapters/auto.py`, `ui/views/kit/`, `bench/speed/`)
and dotted module names (`transformer.decode.trace`) in docs/*.md, README.md and the Python docstrings and comments
resolve, so a move that leaves a pointer behind fails here."""
from __future__ import annotations

import ast
import functools
import io
import re
import subprocess
import tokenize
from pathlib import Path
from typing import Callable

from tests.helpers import ROOT

ROOTS = ("transformer", "ui", "pages", "bench", "tests", "studio_browser", "scripts", "examples", "docs")
# a path from the repository root: a file with its suffix, or a folder with its trailing slash
PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(ROOTS)})/(?:[\w.-]+/)*(?:[\w-]+\.(?:py|md|html|sh|ipynb|toml|json)\b|))")
DOTTED = re.compile(r"(?<![\w./-])(transformer(?:\.\w+)+)")
GENERATED = ("tests/artifacts/", "docs/screenshots/")  # written by runs of the tests and benchmarks
# the performance log keeps the file names of the time it was written (its preface maps them to today's)
HISTORY = ("docs/perf-log.md",)
PLACEHOLDER = re.compile(r"/[A-Z_]+(?:\.\w+)?(?:/|$)")  # transformer/cli/NAME.py: any command's module


def _tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.splitlines() if (ROOT / line).is_file()]


def _prose(path: Path) -> str:
    """A module's docstrings and comments (not its other strings: a test may name a path that must not exist)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, str(path))
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)))]
    comments = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    return "\n".join([*(doc for n in nodes if (doc := ast.get_docstring(n, clean=False))), *comments])


@functools.cache  # both tests read the same files: once per process
def _texts() -> tuple[dict[str, str], dict[str, str]]:
    """The docs' texts and the Python files' whole sources, by path."""
    docs = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in _tracked("docs/*.md", "README.md")
            if str(p.relative_to(ROOT)) not in HISTORY}
    code = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in _tracked("*.py")}
    return docs, code


def _broken(pattern: re.Pattern[str], broken: Callable[[str], bool]) -> list[str]:
    """`where: pointer` for each pointer `pattern` finds in the docs or in a Python file's docstrings and comments that
    is `broken`. A file's prose is part of its source, so only a source with a broken pointer somewhere is parsed for
    its prose (parsing all ~800 files took ~3 CPU-s a test process)."""
    docs, code = _texts()
    found = {f"{where}: {p}" for where, text in docs.items() for p in pattern.findall(text) if broken(p)}
    for where, source in code.items():
        if any(broken(p) for p in pattern.findall(source)):
            found |= {f"{where}: {p}" for p in pattern.findall(_prose(ROOT / where)) if broken(p)}
    return sorted(found)


@functools.cache  # the same names recur in many files
def _resolves_dotted(name: str) -> bool:
    """`transformer.decode.trace` (a module or package), or a name one of them defines
    (`transformer.decode.greedy_decode`). A first part that is no module of ours is another library's attribute path
    (GPT-2's `transformer.h`): skipped."""
    path, parts = ROOT / "transformer", name.split(".")[1:]
    if not ((path / parts[0]).is_dir() or (path / f"{parts[0]}.py").is_file()):
        return True
    for i, part in enumerate(parts):
        if (path / part).is_dir():
            path = path / part
        elif (path / f"{part}.py").is_file():
            path = path / f"{part}.py"
        else:
            source = path / "__init__.py" if path.is_dir() else path
            return i > 0 and source.is_file() and \
                re.search(rf"\b{part}\b", source.read_text(encoding="utf-8")) is not None
        if path.is_file() and i < len(parts) - 1:
            return re.search(rf"\b{parts[i + 1]}\b", path.read_text(encoding="utf-8")) is not None
    return True


def test_every_module_path_in_the_docs_and_docstrings_exists():
    missing = _broken(PATH, lambda found: not found.startswith(GENERATED) and not PLACEHOLDER.search(found)
                      and not (ROOT / found).exists())
    assert missing == [], "pointers to paths that do not exist:\n" + "\n".join(missing)


def test_every_dotted_module_name_resolves():
    missing = _broken(DOTTED, lambda found: not _resolves_dotted(found.rstrip(".")))
    assert missing == [], "dotted names that do not resolve:\n" + "\n".join(missing)
