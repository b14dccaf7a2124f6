"""First page after a cold server start: `make run` (`python -m ui.serve`) vs a plain `streamlit run app.py`.

Both start the same `st.App` (app.py), whose lifespan warms the imports and the default model up before the
server answers; this measures that the plain Streamlit command is as fast as ours. Rounds alternate the two
launchers so a busy machine slows both alike. `PYTHONPATH=. .venv/bin/python -m bench.app.start`
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench.common.pages import default_model, first_page_ms
from studio_browser import launch_chromium, running_app, shipped_checkpoints

LAUNCHERS = ("make run", "streamlit run")


def run(checkpoints: Path, rounds: int) -> dict[str, list[float]]:
    """Milliseconds from navigation start to the first chart drawn, per launcher, one cold server per round."""
    from playwright.sync_api import sync_playwright

    default = default_model(checkpoints)
    times: dict[str, list[float]] = {name: [] for name in LAUNCHERS}
    with tempfile.TemporaryDirectory(prefix="attention-studio-bench-") as runs, sync_playwright() as pw:
        browser = launch_chromium(pw)
        for _ in range(rounds):
            for name in LAUNCHERS:
                with running_app(checkpoints, Path(runs), default=default, launcher=name) as server:
                    times[name].append(first_page_ms(browser, server.url))
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times = run(shipped_checkpoints(), args.rounds)
    base = statistics.median(times["make run"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:>14}: first page {median:7.0f} ms (median of {len(values)}: "
              f"{', '.join(f'{v:.0f}' for v in values)}), {median / base:.2f}x make run")


if __name__ == "__main__":
    main()
