"""The app's Streamlit server as a subprocess on a free local port, started as `make run` or `streamlit run` does."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ui.shell import HOST, ServerNotServing, free_port, wait_until_serving

ROOT = Path(__file__).resolve().parents[1]


class AppStartError(RuntimeError):
    """The Streamlit server did not come up (its log tail is in the message)."""


@dataclass(frozen=True)
class AppServer:
    """A running app: its URL, the file its server writes stdout and stderr to, and the server's process id."""

    url: str
    log: Path
    pid: int

    def log_text(self) -> str:
        """Everything the server has printed so far."""
        return self.log.read_text(errors="replace")


def shipped_checkpoints() -> Path:
    """checkpoints/, the shipped checkpoints; FileNotFoundError saying how to build them when it holds none."""
    shipped = ROOT / "checkpoints"
    if any((p / "config.json").is_file() for p in shipped.iterdir() if p.is_dir()):
        return shipped
    raise FileNotFoundError("no checkpoints: run `make checkpoints` (or pass --checkpoints DIR)")


@contextmanager
def running_app(checkpoints: Path, runs: Path, *, default: str | None = None, extra_env: dict[str, str] | None = None,
                start_timeout: float = 60.0, launcher: str = "make run") -> Iterator[AppServer]:
    """The app as `make run` (`python -m ui.shell.serve`) or a user's plain `streamlit run app.py` starts it, on a free
    local port; yields once its health check answers; always stops the server."""
    port = free_port()
    env = {**os.environ, "ATTENTION_STUDIO_CHECKPOINTS": str(checkpoints), "ATTENTION_STUDIO_RUNS": str(runs),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           **(extra_env or {})}
    env.pop("ATTENTION_STUDIO_DEFAULT", None)
    if default is not None:
        env["ATTENTION_STUDIO_DEFAULT"] = default
    start = {"make run": ["-m", "ui.shell.serve"], "streamlit run": ["-m", "streamlit", "run", "app.py"]}[launcher]
    command = [sys.executable, *start, "--server.headless", "true", "--server.port",
               str(port), "--server.address", HOST, "--browser.gatherUsageStats", "false"]
    with tempfile.TemporaryDirectory(prefix="attention-studio-server-") as folder:
        log_path = Path(folder) / "server.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        server = AppServer(f"http://{HOST}:{port}", log_path, process.pid)
        try:
            try:
                wait_until_serving(server.url, process, start_timeout)
            except ServerNotServing as exc:
                raise AppStartError(f"{exc}:\n{server.log_text()[-3000:]}") from exc
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
