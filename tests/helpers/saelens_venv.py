"""SAELens's own virtual environment for the comparison test (tests/library/dictionaries/test_saelens_compat.py),
built once per machine under ~/.cache/attention-studio/ (or $STUDIO_SAELENS_VENV).

On a fresh machine the build downloads ~380 MB (4-5 min): `start_building` starts it in the background, at low
priority, as soon as a test session has collected the comparison (tests/conftest.py), so no worker waits on it;
`saelens_python` waits for that build (or builds itself when none ran) and returns the venv's interpreter. One build at
a time, whichever process starts it: an exclusive lock on `<venv>.lock`. Run as a module, it is the background build.

sae-lens pins transformer-lens, wandb, datasets and more, so it is not one of the project's requirements: the venv
sees the project's packages through a .pth file and installs sae-lens beside them with torch and transformers
constrained to the project's own versions, so the comparison runs on the same torch."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from transformer.dictionaries import SAELENS_VERSION

VENV = Path(os.environ.get("STUDIO_SAELENS_VENV", Path.home() / ".cache" / "attention-studio" /
                           f"sae-lens-{SAELENS_VERSION}"))
LOCK = VENV.with_name(VENV.name + ".lock")
FAILED = VENV.with_name(VENV.name + ".failed")  # the pip's last line when the background build could not install


class NotInstalled(RuntimeError):
    """sae-lens could not be installed apart (no package registry?); the message is pip's last line."""


def _see_this_project(venv: Path) -> None:
    """Point the venv's .pth at this interpreter's packages: the venv that built it may be gone or another clone's."""
    for pth in venv.glob("lib/python*/site-packages/attention_studio.pth"):
        here = sysconfig.get_paths()["purelib"] + "\n"
        if pth.read_text() != here:
            fresh = pth.with_name(f".{pth.name}.{os.getpid()}")
            fresh.write_text(here)
            os.replace(fresh, pth)


@contextmanager
def _locked(block: bool) -> Iterator[bool]:
    """Hold the build lock (True), or yield False at once when another process holds it and `block` is False."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build() -> None:
    """Build the venv under a temporary name and move it into place; raise NotInstalled if pip fails."""
    import torch
    import transformers

    build = Path(tempfile.mkdtemp(prefix=f".{VENV.name}-", dir=VENV.parent))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(build)], check=True, capture_output=True, timeout=300)
        site = subprocess.run([str(build / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                               "['purelib'])"], check=True, capture_output=True, text=True).stdout.strip()
        Path(site, "attention_studio.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        pins = build / "constraints.txt"
        pins.write_text(f"torch=={torch.__version__}\ntransformers=={transformers.__version__}\n")
        done = subprocess.run([str(build / "bin" / "python"), "-m", "pip", "install", "--quiet",
                               "--disable-pip-version-check", f"sae-lens=={SAELENS_VERSION}", "transformer-lens<4",
                               "-c", str(pins)], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise NotInstalled((done.stderr.strip().splitlines() or ["no output"])[-1])
        (build / ".installed").write_text("")
        shutil.rmtree(VENV, ignore_errors=True)
        os.rename(build, VENV)  # venvs keep absolute paths in their scripts: `python -m pip` still works
    finally:
        shutil.rmtree(build, ignore_errors=True)


def start_building() -> subprocess.Popen | None:
    """Start the build in a background process at low priority unless the venv is there or a build is under way."""
    if (VENV / ".installed").is_file():
        return None
    with _locked(block=False) as free:
        if not free:
            return None
    return subprocess.Popen([sys.executable, "-m", "tests.helpers.saelens_venv"], cwd=Path(__file__).parents[2],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: os.nice(10))


def saelens_python() -> Path:
    """The venv's interpreter, once the build (a background one, or this process's own) is done."""
    with _locked(block=True):
        if not (VENV / ".installed").is_file():
            if FAILED.is_file():
                reason = FAILED.read_text()
                FAILED.unlink()  # the next session tries again
                raise NotInstalled(reason)
            _build()
        _see_this_project(VENV)
    return VENV / "bin" / "python"


def main() -> None:
    """The background build: nothing to do when the venv is there or another process is building it."""
    with _locked(block=False) as free:
        if not free or (VENV / ".installed").is_file():
            return
        FAILED.unlink(missing_ok=True)
        try:
            _build()
        except NotInstalled as failed:
            FAILED.write_text(str(failed))


if __name__ == "__main__":
    main()
