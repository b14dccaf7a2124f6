"""CPU of a server's start (`make run` until its health check answers: app.py's imports and the warm-up, the default
model and Home's offers loaded and decoded) against the CPU of a fresh interpreter importing what the pages import,
measured in the same run; rounds alternate the two so a busy machine slows both alike.
`PYTHONPATH=. .venv/bin/python -m bench.app.start_cpu --rounds 3`
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from studio_browser import ROOT, running_app, shipped_checkpoints

# what warm_up imports (ui/shell/serve.py): the pages' libraries
IMPORTS = ("import altair, pandas, plotly.graph_objects; from transformer import adapters, charts, decode; "
           "from ui import links, models, train, views; from ui.shell import sidebar")


def server_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_cpu(checkpoints: Path) -> float:
    """CPU seconds of one cold server's start, up to its first answer."""
    with tempfile.TemporaryDirectory(prefix="attention-studio-bench-") as root, \
            running_app(checkpoints, Path(root) / "runs", extra_env={"ATTENTION_STUDIO_HF_MODELS": root}) as server:
        return server_cpu(server.pid)


def imports_cpu() -> float:
    """CPU seconds of a fresh interpreter importing the pages' libraries and nothing else."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", IMPORTS], cwd=ROOT, check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    checkpoints = shipped_checkpoints()
    starts, imports = [], []
    for _ in range(args.rounds):
        starts.append(start_cpu(checkpoints))
        imports.append(imports_cpu())
    start, base = statistics.median(starts), statistics.median(imports)
    print(f"server start: {start:.2f} CPU-s (median of {len(starts)}: {', '.join(f'{s:.2f}' for s in starts)}); "
          f"the imports alone {base:.2f} CPU-s ({', '.join(f'{s:.2f}' for s in imports)}); ratio {start / base:.2f}; "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
