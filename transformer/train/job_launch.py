"""Training processes for the app's jobs: a fork server started once, one forked process per job.

`launch_process` is what a `TrainingJob` calls; tests swap it (through `job_supervisor`) for a plain fork.
"""
from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable

from .job_messages import Started, receive


@dataclass(frozen=True, kw_only=True)
class Launched:
    """A training process: its pipe, its pid, and `reap()`, which waits for it to end (killing it if it hangs)."""

    conn: Connection
    pid: int
    reap: Callable[[], None]


class ForkServer:
    """Starts `job_server` once and asks it for one forked training process per job (~0.1 s each)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._address = ""

    def _ensure_running(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        folder = tempfile.mkdtemp(prefix="attention-studio-jobs-")  # mode 0700: only this user can connect
        self._address = os.path.join(folder, "jobs.sock")
        root = str(Path(__file__).resolve().parents[2])  # the folder holding the `transformer` package
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
        self._process = subprocess.Popen([sys.executable, "-m", "transformer.train.job_server", self._address],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=root)
        assert self._process.stdout is not None  # a pipe (stdout=PIPE)
        if self._process.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"the training server did not start (exit code {self._process.wait()})")

    def warm_up(self) -> None:
        """Start the server now (it imports torch: seconds), so the first Train click starts at once."""
        with self._lock:
            self._ensure_running()

    def launch(self) -> Launched:
        with self._lock:
            self._ensure_running()
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(self._address)
        conn = Connection(sock.detach())
        started = receive(conn)
        if not isinstance(started, Started):
            conn.close()
            raise RuntimeError(f"the training server answered {type(started).__name__}, not Started")
        return Launched(conn=conn, pid=started.pid, reap=lambda: _reap(started.pid))


def _reap(pid: int, timeout: float = 10.0) -> None:
    """Wait for a fork server's child to be gone (the server reaps it); kill it if it outlives the timeout. Where
    the kernel offers a pidfd (Linux), the wait ends when the child does, not at the next poll."""
    if not _exited(pid, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _exited(pid: int, timeout: float) -> bool:
    """True once `pid` has ended (within `timeout` seconds)."""
    try:
        fd = os.pidfd_open(pid)  # readable when the process has ended
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):  # no pidfd here: poll
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            time.sleep(0.02)
        return False
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


fork_server = ForkServer()


def launch_process() -> Launched:
    """A new training process running `job_worker.main` (tests swap this for a plain fork)."""
    return fork_server.launch()
