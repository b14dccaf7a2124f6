"""`make desktop`: the studio in its own window (pywebview + Qt) under a virtual display, and no display at all.

Marked `desktop`: under CI (CI=true) a skip here is a failure (tests/conftest.py), as `make test` installs Xvfb and Qt's
system libraries where it can."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers import ROOT
from ui.shell import display_problem

LAUNCHER = [sys.executable, "-m", "ui.shell.desktop"]
MARK = "ATTENTION_STUDIO_DESKTOP_TEST"  # an environment variable every process the launcher starts inherits

pytestmark = pytest.mark.desktop


def _has_qt() -> bool:
    try:
        import PyQt6.QtWebEngineWidgets  # noqa: F401
        import webview  # noqa: F401
    except ImportError:
        return False
    return True


def _processes_marked(token: str) -> list[int]:
    """Pids of live processes whose environment carries MARK=token (the launcher's whole tree, orphans included)."""
    found = []
    needle = f"{MARK}={token}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":  # a zombie has ended; only its parent's wait is missing
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def _launcher_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return {**env, **extra}


@pytest.fixture
def virtual_display() -> Iterator[str]:
    """A fresh Xvfb display (":N") for one test."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (`make test` installs it as root; or apt-get install xvfb xauth)")
    if not _has_qt():
        pytest.skip("pywebview's Qt backend is not installed (pip install -r requirements-desktop.txt)")
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1400x950x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as numbers:
            number = numbers.readline().strip()
        assert number, "Xvfb did not report a display number"
        yield f":{number}"
    finally:
        xvfb.terminate()
        xvfb.wait(10)


def _start(display: str, report: Path, token: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*LAUNCHER, "--report", str(report), *args], cwd=ROOT,
                            env=_launcher_env(DISPLAY=display, **{MARK: token}), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _assert_home_drawn(report: Path) -> dict:
    shown = json.loads(report.read_text())
    assert shown["title"] == "Attention Studio"
    assert shown["heading"] == "Attention Studio"
    assert (shown["try_it"] or "").startswith("Try it · ")  # the Home page's try-it box, on the default model
    assert shown["url"].startswith("http://127.0.0.1:")
    return shown


def _assert_nothing_left(token: str, server_pid: int) -> None:
    deadline = time.monotonic() + 10
    while _processes_marked(token) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_marked(token) == [], "processes of the desktop launcher are still running"
    assert not Path(f"/proc/{server_pid}").exists() or "Z" in Path(f"/proc/{server_pid}/stat").read_text()


def test_without_a_display_it_says_so_in_one_line_and_exits_1():
    done = subprocess.run(LAUNCHER, cwd=ROOT, env=_launcher_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("no display:") and "make run" in lines[0]


def test_a_display_that_cannot_be_opened_is_no_display_either():
    # Whether or not Qt's system libraries are installed: the display is looked for before Qt is asked.
    done = subprocess.run(LAUNCHER, cwd=ROOT, env=_launcher_env(DISPLAY=":987"), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("no display:") and ":987" in lines[0] and "make run" in lines[0]


def test_a_display_is_there_when_something_listens_at_its_socket(tmp_path: Path):
    env = {"WAYLAND_DISPLAY": "wayland-test", "XDG_RUNTIME_DIR": str(tmp_path)}
    assert "WAYLAND_DISPLAY=wayland-test" in display_problem(env)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(tmp_path / "wayland-test"))
        listener.listen()
        assert display_problem(env) is None
        assert display_problem({**env, "DISPLAY": ":987"}) is None  # either display will do
    assert display_problem({**env, "DISPLAY": ":987"}).startswith("no display: nothing answers at WAYLAND_DISPLAY")


@pytest.mark.slow
def test_the_window_opens_on_home_and_closing_it_stops_the_server(virtual_display: str, tmp_path: Path):
    token, report = uuid.uuid4().hex, tmp_path / "shown.json"
    launcher = _start(virtual_display, report, token, "--close")
    try:
        out, err = launcher.communicate(timeout=300)
    finally:
        launcher.kill()
    assert launcher.returncode == 0, err[-2000:]
    shown = _assert_home_drawn(report)
    _assert_nothing_left(token, shown["server_pid"])


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_closes_the_window_and_stops_the_server(virtual_display: str, tmp_path: Path, sig: int):
    token, report = uuid.uuid4().hex, tmp_path / "shown.json"
    launcher = _start(virtual_display, report, token)
    try:
        deadline = time.monotonic() + 240
        while not report.exists() and launcher.poll() is None and time.monotonic() < deadline:
            time.sleep(0.3)
        assert report.exists(), "the Home page did not draw in the window"
        shown = _assert_home_drawn(report)
        assert Path(f"/proc/{shown['server_pid']}").exists()
        launcher.send_signal(sig)
        launcher.communicate(timeout=60)
    finally:
        launcher.kill()
    assert launcher.returncode == 130
    _assert_nothing_left(token, shown["server_pid"])
