"""The app's server started as a child process on this machine: a free local port for it, and the wait until it answers.

One place for what the desktop window (`ui/shell/desktop.py`), the browser tests and the benchmarks
(`studio_browser`) all do before they show the app. Standard library only: the desktop launcher imports it without
loading torch or Streamlit.
"""
from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

HOST = "127.0.0.1"
HEALTH_PATH = "/_stcore/health"  # Streamlit answers "ok" here once the server (and the app's warm-up) is up


class ServerNotServing(RuntimeError):
    """The server exited before it answered, or did not answer in time (one line)."""


def free_port(host: str = HOST) -> int:
    """A TCP port on `host` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def is_serving(url: str, timeout: float = 1.0) -> bool:
    """True when the Streamlit server at `url` answers its health check with ok."""
    try:
        with urllib.request.urlopen(f"{url}{HEALTH_PATH}", timeout=timeout) as response:
            return response.status == 200 and response.read().strip() == b"ok"
    except OSError:
        return False


def wait_until_serving(url: str, process: subprocess.Popen, timeout: float, poll_s: float = 0.1) -> None:
    """Return once the server at `url` answers; raise ServerNotServing if `process` exits first or `timeout` s pass."""
    deadline = time.monotonic() + timeout
    while not is_serving(url):
        if process.poll() is not None:
            raise ServerNotServing(f"the studio's server stopped with status {process.returncode} before it answered "
                                   f"on {url}")
        if time.monotonic() > deadline:
            raise ServerNotServing(f"the studio's server did not answer on {url} within {timeout:.0f} s")
        time.sleep(poll_s)
