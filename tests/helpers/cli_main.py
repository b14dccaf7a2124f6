"""The command line's `main` run in the test's process, its exit code and output as a real process's would be (where
the process itself is not what a test checks: the interpreter's start is most of a real process's time)."""
from __future__ import annotations

import contextlib
import io
import subprocess

from transformer.cli import main


def in_process(*args: str) -> subprocess.CompletedProcess:
    """`python -m transformer ARGS` through `main` here: (args, exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(["transformer", *args], code, out.getvalue(), err.getvalue())
