"""`make bench` (`python -m bench`): every quick benchmark, one after another, each in its own process (so one's
threads and caches do not colour the next). Figures go into bench/README.md.

The benchmarks live in folders by what they measure; the quick and long sets are found by folder:

- `speed/` (the library's speed) and `app/` (the app in a browser or AppTest): quick, unless the module says
  `LONG = True`;
- `load/` (many sessions at once), `quality/` (what a training or a recipe reaches) and `screenshots/`
  (docs/screenshots/): long, unless the module says `LONG = False`;
- `common/` is the code they share (measures, the load generator), not a benchmark.

Quick means it finishes in a few minutes with its defaults; a long one runs by itself, with nothing else training on
the machine. `python -m bench --list` names both sets; `python -m bench FOLDER ...` runs the quick ones of those
folders; `python -m bench.FOLDER.NAME` runs one.
"""
import ast
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
FOLDERS = {"speed": False, "app": False, "load": True, "quality": True, "screenshots": True}  # folder: long by default


def marked_long(path: Path) -> bool | None:
    """The module's own `LONG = True/False` (read without importing it), or None."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "LONG" for t in node.targets):
            return bool(ast.literal_eval(node.value))
    return None


def benchmarks() -> dict[str, bool]:
    """Every benchmark's module name (`bench.FOLDER.NAME`) and whether it is long, folder by folder."""
    found = {}
    for folder, long_default in FOLDERS.items():
        for path in sorted((HERE / folder).glob("*.py")):
            if path.name != "__init__.py":
                own = marked_long(path)
                found[f"bench.{folder}.{path.stem}"] = long_default if own is None else own
    return found


def main(argv: list[str]) -> int:
    found = benchmarks()
    if "--list" in argv:
        for folder in FOLDERS:
            quick = [n.rsplit(".", 1)[1] for n, long in found.items() if n.split(".")[1] == folder and not long]
            long = [n.rsplit(".", 1)[1] for n, is_long in found.items() if n.split(".")[1] == folder and is_long]
            print(f"{folder}/  quick: {' '.join(quick) or '-'}  long: {' '.join(long) or '-'}")
        print("run one: python -m bench.FOLDER.NAME")
        return 0
    folders = [a for a in argv if not a.startswith("-")] or list(FOLDERS)
    unknown = [f for f in folders if f not in FOLDERS]
    if unknown:
        print(f"no such folder: {' '.join(unknown)} (folders: {' '.join(FOLDERS)})")
        return 2
    quick = [n for n, long in found.items() if not long and n.split(".")[1] in folders]
    failed = []
    for name in quick:
        print(f"\n== {name}", flush=True)
        began = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", name])
        print(f"== {name}: exit {code} after {time.perf_counter() - began:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print("failed:", " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
