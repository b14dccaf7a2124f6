"""Under CI (CI=true) a skipped browser or desktop test is a failure: `make test` installs what those tests need
(scripts/system-packages.sh), so a skip there means CI stopped running them, not that the machine lacks them."""
from __future__ import annotations

import os

import pytest

MUST_RUN_UNDER_CI = ("browser", "desktop")  # the markers whose tests CI runs, never skips


def under_ci() -> bool:
    """True where the environment says this is CI (CI=true, as CI services set it; or 1 / yes)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    report = yield
    marker = next((m for m in MUST_RUN_UNDER_CI if item.get_closest_marker(m)), None)
    if report.skipped and marker is not None and under_ci() and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"a {marker} test skipped under CI (CI={os.environ['CI']}), where it must run: {reason}"
    return report
