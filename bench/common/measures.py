"""What the app benchmarks measure: latency percentiles, the printed table with pass/fail, CPU time of processes."""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence


def best_of(fn: Callable[[], Any], repeats: int = 3) -> tuple[Any, float]:
    """The last value of `fn()` run `repeats` times, and the fastest run's wall seconds."""
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return value, best


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear between the closest ranks."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Measure:
    """One row of a benchmark table: what was timed, its samples (ms) and the target for `target_of` (p50/p95)."""

    name: str
    samples_ms: tuple[float, ...]
    target_ms: float | None = None
    target_of: str = "p50"

    @property
    def p50(self) -> float:
        return percentile(self.samples_ms, 50)

    @property
    def p95(self) -> float:
        return percentile(self.samples_ms, 95)

    @property
    def passed(self) -> bool | None:
        """Whether the target is met; None without a target."""
        if self.target_ms is None:
            return None
        return (self.p50 if self.target_of == "p50" else self.p95) < self.target_ms

    def to_dict(self) -> dict:
        return {"name": self.name, "n": len(self.samples_ms), "p50_ms": round(self.p50, 1),
                "p95_ms": round(self.p95, 1), "max_ms": round(max(self.samples_ms), 1), "target_ms": self.target_ms,
                "target_of": self.target_of, "passed": self.passed}


def table(measures: Sequence[Measure]) -> str:
    """A Markdown table: n, p50, p95, max, target and pass/fail per measure."""
    lines = ["| measure | n | p50 ms | p95 ms | max ms | target | result |", "|---|--:|--:|--:|--:|---|---|"]
    for m in measures:
        target = f"{m.target_of} < {m.target_ms:,.0f} ms" if m.target_ms is not None else "–"
        result = {True: "pass", False: "**miss**", None: "–"}[m.passed]
        lines.append(f"| {m.name} | {len(m.samples_ms)} | {m.p50:,.0f} | {m.p95:,.0f} | {max(m.samples_ms):,.0f} | "
                     f"{target} | {result} |")
    return "\n".join(lines)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
        tree.setdefault(ppid, []).append(int(stat.parent.name))
    return tree


def browser_cpu_seconds(server_pid: int) -> float:
    """CPU time used so far by this process's live descendants other than the app server: Playwright and Chromium."""
    tree = _children()
    total, todo = 0.0, list(tree.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        if pid == server_pid:
            continue
        todo += tree.get(pid, [])
        try:
            total += cpu_seconds(pid)
        except OSError:
            pass  # it ended meanwhile
    return total
