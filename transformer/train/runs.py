"""Training runs owned by the server process, not by a browser tab: any session can find, watch and steer one.

A `LiveRun` is one run trained by successive jobs (Train, then Resume ...): the server keeps its plain record,
each job's process its trainer. `server_runs` (a `ServerRuns`) keeps every
run of this server process, so a reload, a second tab or another browser sees the runs that train and can attach
to one. It keeps every run that trains and the newest `keep_ended` ones that ended (older ended runs live on as
autosaved checkpoints on disk), so a server that runs for weeks keeps a bounded number in memory.
"""
from __future__ import annotations

import itertools
import threading
import time
import uuid
from dataclasses import dataclass, field

from ..decode import AttentionTrace
from .job_plan import JobPlan, RunRecord
from .job_supervisor import TrainingJob

KEEP_ENDED_RUNS = 6  # ended runs kept in memory, newest first; older ones are only on disk (autosaved)
_numbers = itertools.count(1)


@dataclass(eq=False)
class LiveRun:
    """One run of the server: a plain record of its training (`RunRecord`), trained by one or more successive jobs
    (Train, then Resume ...), each by its own `JobPlan`."""

    job: TrainingJob  # the newest job; every job of the run shares its record
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    job_number: int = 1
    earlier_timeline: list[tuple[int, AttentionTrace]] = field(default_factory=list)
    saved_as: str | None = None
    autosaved_as: str | None = None
    number: int = field(default_factory=lambda: next(_numbers))
    started_at: float = field(default_factory=time.time)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)  # job changes and autosaves

    @property
    def plan(self) -> JobPlan:
        """The newest job's plan: the task, configs, budgets and probe settings."""
        return self.job.plan

    @property
    def record(self) -> RunRecord:
        """Where the run's training stands between jobs (weights, optimizer, step, history, evaluations)."""
        return self.job.record

    @property
    def probe(self) -> str:
        """The sentence the run records now."""
        return self.job.probe or ""

    @property
    def probe_every(self) -> int:
        return self.plan.probe_every

    @property
    def max_seconds(self) -> float | None:
        """The newest job's time budget."""
        return self.plan.max_seconds

    @property
    def task_name(self) -> str:
        """Name of the task being trained."""
        return self.plan.task.name

    @property
    def name(self) -> str:
        """What pickers and lists call the run: its task and a number unique on this server."""
        return f"{self.task_name} run #{self.number}"

    @property
    def active(self) -> bool:
        """True while the job waits for a slot or trains."""
        return self.job.snapshot(history_tail=1).active

    def timeline(self) -> list[tuple[int, AttentionTrace]]:
        """Probe attention snapshots of every job of this run, oldest first (one per training step)."""
        merged = dict(self.earlier_timeline)
        merged.update(self.job.timeline())
        return sorted(merged.items(), key=lambda item: item[0])

    def replace_job(self, job: TrainingJob) -> None:
        """Continue with a new job (after Stop or the end of a budget; it trains from this run's record), keeping
        the timeline so far."""
        if job.record is not self.record:
            raise ValueError("a run's next job continues the run's own record")
        with self.lock:
            self.earlier_timeline = self.timeline()
            self.job = job
            self.job_number += 1


class ServerRuns:
    """The runs of this server process, newest first; thread-safe (sessions and supervising threads use it)."""

    def __init__(self, keep_ended: int = KEEP_ENDED_RUNS) -> None:
        self.keep_ended = keep_ended
        self._lock = threading.Lock()
        self._runs: dict[str, LiveRun] = {}

    def add(self, run: LiveRun) -> LiveRun:
        """Register a run (idempotent) and forget the oldest ended runs beyond `keep_ended`."""
        with self._lock:
            self._runs[run.id] = run
        self.prune()
        return run

    def get(self, run_id: str) -> LiveRun | None:
        """The run with this id, if the server still holds it."""
        with self._lock:
            return self._runs.get(run_id)

    def runs(self) -> list[LiveRun]:
        """Every run held, newest first."""
        with self._lock:
            return sorted(self._runs.values(), key=lambda r: r.number, reverse=True)

    def training(self) -> list[LiveRun]:
        """The runs that wait for a slot or train now, newest first."""
        return [r for r in self.runs() if r.active]

    def prune(self) -> None:
        """Forget ended runs beyond the newest `keep_ended` (runs that train are always kept)."""
        ended = [r for r in self.runs() if not r.active]
        with self._lock:
            for run in ended[self.keep_ended:]:
                self._runs.pop(run.id, None)

    def clear(self) -> None:
        """Forget every run (tests)."""
        with self._lock:
            self._runs.clear()


server_runs = ServerRuns()
