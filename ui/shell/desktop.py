"""Attention Studio in its own window: `make desktop` (or `.venv/bin/python -m ui.shell.desktop`).

The launcher starts the app's Streamlit server as a child process on a free local port (in its own process group),
waits until it answers, and shows it in a native window (pywebview with its Qt backend: no browser tab, no address
bar). When the window closes, on Ctrl-C or SIGTERM, or on an error, the server and everything it started are
stopped. Without a display it says so in one line and exits 1. It imports neither torch nor Streamlit itself: the
server, in its own process, does.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from .local_server import HOST, ServerNotServing, free_port, wait_until_serving

ROOT = Path(__file__).resolve().parents[2]
TITLE = "Attention Studio"
ICON = ROOT / "assets" / "icon.png"
START_TIMEOUT_S = 180.0  # the server answers after its warm-up (imports, default model): seconds, more on a busy CPU
STOP_TIMEOUT_S = 10.0
X11_SOCKETS = Path("/tmp/.X11-unix")
EXIT_NO_DISPLAY, EXIT_INTERRUPTED = 1, 130
NO_DISPLAY = "no display: {why}; use `make run` to open the studio in your browser"
NO_QT = "cannot open a window: {why}; or use `make run` to open the studio in your browser"
# What the window shows once the Home page has drawn: the page title, its heading and the "Try it" box's heading.
PAGE_PROBE = """(() => {
  const h1 = document.querySelector('h1');
  const h4 = [...document.querySelectorAll('h4')].map(e => e.textContent).find(t => t.startsWith('Try it'));
  return JSON.stringify({title: document.title, heading: h1 ? h1.textContent : null, try_it: h4 || null});
})()"""


def _listens(family: int, address: str | bytes | tuple[str, int]) -> bool:
    """True when something accepts a connection at `address`."""
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(2.0)
        try:
            sock.connect(address)
        except OSError:
            return False
    return True


def _x11_answers(display: str) -> bool | None:
    """Whether an X server listens at DISPLAY `display` (":1", "unix:1.0", "host:10"); None for forms not read here."""
    host, colon, rest = display.rpartition(":")
    number = rest.split(".", 1)[0]
    if not colon or not number.isdigit() or host.endswith(":") or "/" in host:
        return None  # DECnet, launchd paths and the like: Qt decides
    if host in ("", "unix"):
        path = str(X11_SOCKETS / f"X{number}")
        return _listens(socket.AF_UNIX, path) or _listens(socket.AF_UNIX, b"\0" + path.encode())  # file or abstract
    return _listens(socket.AF_INET, (host, 6000 + int(number)))


def display_problem(env: dict[str, str]) -> str | None:
    """One line saying why no display can be reached through `env` (DISPLAY, WAYLAND_DISPLAY), else None.

    Asked before Qt is: a display that is not there is "no display" whether or not Qt's system libraries are
    installed (without them Qt cannot even try to open it)."""
    x11, wayland = env.get("DISPLAY"), env.get("WAYLAND_DISPLAY")
    if not x11 and not wayland:
        return NO_DISPLAY.format(why="neither DISPLAY nor WAYLAND_DISPLAY is set")
    tried = []
    if wayland:
        path = wayland if wayland.startswith("/") else os.path.join(env.get("XDG_RUNTIME_DIR", ""), wayland)
        if _listens(socket.AF_UNIX, path):
            return None
        tried.append(f"WAYLAND_DISPLAY={wayland}")
    if x11:
        if _x11_answers(x11) is not False:
            return None
        tried.append(f"DISPLAY={x11}")
    return NO_DISPLAY.format(why=f"nothing answers at {' or '.join(tried)}")


def window_problem(env: dict[str, str] | None = None) -> str | None:
    """One line saying why no window can be opened here (no display, Qt missing or unable to open it), else None."""
    env = dict(os.environ if env is None else env)
    problem = display_problem(env)
    if problem is not None:
        return problem
    # Qt aborts the whole process when it cannot open the display, so ask a throwaway one first.
    probe = "import sys, webview; from PyQt6.QtWidgets import QApplication; QApplication(sys.argv)"
    try:
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return NO_DISPLAY.format(why="Qt did not open the display within 60 s")
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    if any("No module named" in line for line in lines):
        return NO_QT.format(why="pywebview or PyQt6 is not installed (pip install -r requirements-desktop.txt)")
    where = env.get("WAYLAND_DISPLAY") or env.get("DISPLAY")
    lost = next((line for line in lines if "could not connect" in line.lower() or "failed to connect" in line.lower()),
                None)
    if lost is not None:
        return NO_DISPLAY.format(why=f"Qt cannot open the display {where} ({lost})")
    if any("is needed to load the Qt xcb platform plugin" in line or "error while loading shared" in line
           for line in lines):
        return NO_QT.format(why="Qt's system libraries are missing (as root `make desktop` installs them: "
                                "scripts/system-packages.sh qt)")
    why = lines[-1] if lines else f"exit status {done.returncode}"
    return NO_DISPLAY.format(why=f"Qt cannot open the display {where} ({why})")


def _die_with_parent() -> None:
    """In the server process before it runs: SIGTERM it if the launcher dies, even by SIGKILL (Linux only)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start_server(port: int) -> subprocess.Popen:
    """The app's Streamlit server on 127.0.0.1:port as `make run` starts it, in a process group of its own."""
    command = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
               "--server.address", HOST, "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    return subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=_die_with_parent)


def stop_server(server: subprocess.Popen) -> None:
    """Stop the server and every process in its group: SIGTERM, then SIGKILL for what is left."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        server.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(server.pid, signal.SIGKILL)  # the group outlives its leader while a child of it still runs
    except ProcessLookupError:
        pass
    server.wait()


def _report_when_drawn(window: Any, report: Path, close: bool, server_pid: int, timeout: float) -> None:
    """Wait for the Home page to draw in `window`, write what it shows to `report` (JSON), then close if asked."""
    window.events.loaded.wait(timeout)
    deadline, seen = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        try:
            seen = json.loads(window.evaluate_js(PAGE_PROBE) or "{}")
        except Exception:  # noqa: BLE001 - the page is still loading (or being replaced)
            seen = {}
        if seen.get("heading") and seen.get("try_it"):
            break
        time.sleep(0.5)
    partial = report.with_name(report.name + ".partial")
    partial.write_text(json.dumps({**seen, "url": window.get_current_url(), "server_pid": server_pid}))
    partial.replace(report)  # whole or not at all, for a reader polling for the file
    if close:
        window.destroy()


def _close_on_signals(window: Any, interrupted: threading.Event) -> None:
    """Close the window on SIGINT/SIGTERM. Qt's loop runs no Python in the main thread, so a Python handler would
    wait for the next event; the signal's wake-up byte, read here in a thread, closes the window at once."""
    reader, writer = os.pipe()  # raw descriptors: nothing closes them while the window is open
    os.set_blocking(writer, False)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: interrupted.set())
    signal.set_wakeup_fd(writer, warn_on_full_buffer=False)

    def watch() -> None:
        while os.read(reader, 1):
            interrupted.set()
            try:
                window.destroy()
            except Exception:  # noqa: BLE001 - already closing
                pass
    threading.Thread(target=watch, name="close-on-signal", daemon=True).start()


def open_window(url: str, *, server_pid: int, report: Path | None = None, close: bool = False) -> bool:
    """Show `url` in a native window until it is closed; True when a signal closed it (Ctrl-C, SIGTERM)."""
    import webview

    if os.geteuid() == 0:  # Chromium (inside QtWebEngine) refuses to run as root with its sandbox on
        flags = os.environ.get("QTWEBENGINE_CHROMIUM_FLAGS", "")
        if "--no-sandbox" not in flags:
            os.environ["QTWEBENGINE_CHROMIUM_FLAGS"] = f"{flags} --no-sandbox".strip()
    window = webview.create_window(TITLE, url, width=1360, height=900, min_size=(720, 520))
    interrupted = threading.Event()
    _close_on_signals(window, interrupted)
    if report is None:
        webview.start(gui="qt", icon=str(ICON))
    else:
        webview.start(_report_when_drawn, (window, report, close, server_pid, START_TIMEOUT_S), gui="qt",
                      icon=str(ICON))
    return interrupted.is_set()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Open the studio in its own window; returns the exit status (0 closed, 1 cannot open, 130 interrupted)."""
    parser = argparse.ArgumentParser(description="Attention Studio in its own window (`make run` opens it in a "
                                                 "browser instead).")
    parser.add_argument("--report", type=Path, metavar="FILE",
                        help="for tests: once the Home page has drawn, write what the window shows to FILE (JSON)")
    parser.add_argument("--close", action="store_true", help="for tests: close the window after --report")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # until the window is up: stop as Ctrl-C does, server included
    problem = window_problem()
    if problem is not None:
        print(problem, file=sys.stderr)
        return EXIT_NO_DISPLAY
    port = free_port()
    server = start_server(port)
    url = f"http://{HOST}:{port}"
    try:
        wait_until_serving(url, server, START_TIMEOUT_S, poll_s=0.25)
        interrupted = open_window(f"{url}/", server_pid=server.pid, report=args.report, close=args.close)
        return EXIT_INTERRUPTED if interrupted else 0
    except ServerNotServing as exc:  # the server's own messages, if any, are above
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C while waiting for the server
        return EXIT_INTERRUPTED
    finally:
        stop_server(server)


if __name__ == "__main__":
    sys.exit(main())
