"""Under CI (CI=true) a skipped browser or desktop test fails; elsewhere it skips with its reason."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.skips_under_ci import under_ci

CONFTEST = "from tests.helpers.skips_under_ci import pytest_runtest_makereport  # as tests/conftest.py has it\n"
PROBE = '''
import pytest

@pytest.mark.browser
def test_browser():
    pytest.skip("no Chromium here")

@pytest.mark.desktop
@pytest.mark.skip(reason="no Xvfb here")
def test_desktop():
    pass

def test_other():
    pytest.skip("nothing CI must run")
'''


def _run(tmp_path: Path, ci: str | None) -> str:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci is not None else {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-W", "ignore::pytest.PytestUnknownMarkWarning", "test_probe.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return done.stdout


def test_under_ci_a_skipped_browser_or_desktop_test_fails(tmp_path: Path):
    out = _run(tmp_path, "true")
    assert "1 failed, 1 skipped, 1 error" in out, out  # a skip in the call fails it, one in its setup is an error
    assert "a browser test skipped under CI" in out and "no Chromium here" in out, out
    assert "a desktop test skipped under CI" in out and "no Xvfb here" in out, out


def test_elsewhere_they_skip_with_their_reason(tmp_path: Path):
    out = _run(tmp_path, None)
    assert "3 skipped" in out and "no Chromium here" in out, out


@pytest.mark.parametrize("ci, says", [("true", True), ("1", True), ("yes", True), ("TRUE", True), ("", False),
                                      ("false", False), ("0", False)])
def test_ci_is_what_ci_services_set(monkeypatch: pytest.MonkeyPatch, ci: str, says: bool):
    """CI=1 and CI=yes count as CI=true (the hook the runs above exercise reads this)."""
    monkeypatch.setenv("CI", ci)
    assert under_ci() is says
