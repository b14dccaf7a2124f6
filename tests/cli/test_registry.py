"""The command line's registry: every command is one module of `transformer/cli/` that registers itself the same way,
`python -m transformer --help` lists them all, each `--help` describes its command, and the package's docstring
lists the same commands."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

import pytest

import transformer.cli as cli
from tests.helpers import ROOT
from transformer.cli import COMMANDS, main
from transformer.cli.common import Parser

NAMES = [command.__name__.rsplit(".", 1)[-1] for command in COMMANDS]


def _registered(command: object) -> dict[str, argparse.ArgumentParser]:
    """The parsers one module's `register` adds to a fresh set of subcommands."""
    commands = Parser(prog="probe").add_subparsers(dest="command")
    command.register(commands)  # type: ignore[attr-defined]
    return dict(commands.choices)


@pytest.mark.parametrize("command", COMMANDS, ids=NAMES)
def test_each_module_registers_one_command_named_for_it_that_runs_its_run(command):
    parsers = _registered(command)
    name = command.__name__.rsplit(".", 1)[-1]
    assert list(parsers) == [name]
    assert parsers[name].get_default("run") is command.run
    assert parsers[name].description, f"{name}: add_parser(..., description=...) is what `{name} --help` says"
    assert command.__doc__ and callable(command.run)


def test_every_registered_command_is_listed_with_its_help_by_python_m_transformer_help(monkeypatch, capsys):
    """`--help` as `python -m transformer` runs it (its `main`, in this process: the real process's entry is
    test_cli's), at 100 columns."""
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "{" + ",".join(NAMES) + "}" in out
    for name in NAMES:  # a row per command: its name, then what it does
        assert re.search(rf"^    {name} +\w", out, re.M), f"{name} is not described in --help"


def test_with_no_command_the_one_error_line_names_every_command(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err == f"error: the following arguments are required: {{{','.join(NAMES)}}} (see --help)\n"


@pytest.mark.parametrize("name", NAMES)
def test_each_command_help_describes_it(name, capsys):
    with pytest.raises(SystemExit) as stop:
        main([name, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m transformer {name}")
    described = _registered(COMMANDS[NAMES.index(name)])[name].description
    assert "".join(described.split()) in "".join(out.split())  # wrapped at spaces and hyphens


def test_the_package_docstring_lists_the_registered_commands_in_order():
    listed = re.findall(r"^    (\w+)  +\S", cli.__doc__ or "", re.M)
    assert listed == NAMES, "transformer/cli/__init__.py's docstring lists the commands of COMMANDS, in its order"


def test_every_module_of_the_package_is_a_command_its_helper_or_common():
    """A newcomer finds a command's code by its name: `NAME.py`, and `NAME_*.py` for what only it uses."""
    stray = [p.name for p in sorted((ROOT / "transformer" / "cli").glob("*.py"))
             if p.stem not in ("__init__", "common", *NAMES) and p.stem.split("_")[0] not in NAMES]
    assert stray == []
    assert not [p for p in (ROOT / "transformer" / "cli").iterdir() if p.is_dir() and p.name != "__pycache__"]


def _fresh(code: str) -> list[str]:
    """What a fresh interpreter prints after running `code` (the command line as a user's process starts it)."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    return done.stdout.splitlines()


HELP_PROBE = ("import contextlib, io, json, sys\nfrom transformer.cli import main\nout = io.StringIO()\n"
              "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n    main({argv})\n"
              "print(out.getvalue().count('\\n'))\nprint(json.dumps(sorted(m for m in sys.modules\n"
              "    if m.startswith('transformer') or m in ('torch', 'pandas', 'altair'))))")


def test_help_in_a_fresh_process_lists_every_command_without_importing_the_library():
    """`python -m transformer --help` answers at once: the command lines come from HELP, not from importing torch
    and every command's module."""
    lines, loaded = _fresh(HELP_PROBE.format(argv=["--help"]))
    assert int(lines) > len(NAMES)
    assert json.loads(loaded) == ["transformer", "transformer.cli", "transformer.cli.common"]


@pytest.mark.slow  # imports torch in a fresh interpreter
def test_a_command_imports_only_its_own_module():
    """`train` (each torchrun rank) imports its own module and what it uses, not another command's (charts, pandas,
    the analysis)."""
    _, loaded = _fresh(HELP_PROBE.format(argv=["train", "--help"]))
    modules = set(json.loads(loaded))
    assert "transformer.cli.train" in modules and "torch" in modules
    assert not modules & {f"transformer.cli.{name}" for name in NAMES if name != "train"}
    assert not modules & {"pandas", "altair", "transformer.analysis", "transformer.charts"}


def test_each_user_error_is_named_by_the_module_that_defines_it():
    """`main` catches an error class once its module is imported: the one that defines it, or a process that raised
    it without importing the named module would print a traceback instead of one line."""
    for (module, name), cls in zip(cli._USER_ERRORS, cli.USER_ERRORS, strict=True):
        assert cls.__module__ == module and cls.__name__ == name
