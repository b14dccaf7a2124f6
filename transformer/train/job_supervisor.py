"""Background training for the app: a training process per job, a supervising thread, snapshots the UI polls.

The training itself runs in a child process (`job_worker`), forked from a server process that has imported
torch already: a thread in the server would fight the page scripts for the GIL around each of its ~200 torch
ops a step (measured: the Train page open cut in-app training to 9–26 % of the CLI's speed). A supervising
thread per job waits for a training slot, sends the job's `JobPlan` and the run's training state, forwards Stop
and probe changes, and turns the child's reports into what the UI reads: metrics, an eval-mode copy of the newest
weights and the probe's attention timeline, published under a lock as immutable snapshots. The server has no
trainer: at the end the child hands back the full training state (weights, optimizer, step), which the job adds to
the run's `RunRecord`, so Resume and Save continue exactly where it stopped; a job whose process died without it
leaves the record as it was.
"""
from __future__ import annotations

import dataclasses
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from ..decode import AttentionTrace
from ..model import Network
from .job_launch import Launched, fork_server, launch_process
from .job_messages import (
    Ended,
    EvalDone,
    FromWorker,
    Order,
    ProbeChange,
    ProbeTrace,
    Progress,
    Stop,
    ToWorker,
    TrainingState,
    Weights,
    receive,
    send,
)
from .job_plan import JobPlan, RunRecord, model_from_weights
from .job_slots import MAX_CONCURRENT_JOBS, training_slots
from .stage import rule_to_meet

__all__ = ["MAX_CONCURRENT_JOBS", "JobSnapshot", "Launched", "TrainingJob", "fork_server", "launch_process",
           "running_jobs"]
_jobs_lock = threading.Lock()
_live_jobs: set["TrainingJob"] = set()


def running_jobs() -> int:
    """How many jobs hold or wait for a training slot in this process."""
    with _jobs_lock:
        return len(_live_jobs)


@dataclass(frozen=True, kw_only=True)
class JobSnapshot:
    """What the UI shows about a job at one moment."""

    status: str  # "waiting", "running", "finished", "stopped", "failed"
    message: str
    step: int
    target_steps: int
    elapsed: float
    max_seconds: float | None
    steps_per_s: float
    tokens_per_s: float
    history: tuple[dict, ...]
    evals: tuple[dict, ...]
    weights_version: int

    @property
    def active(self) -> bool:
        return self.status in ("waiting", "running")

    @property
    def seconds_left(self) -> float | None:
        return None if self.max_seconds is None else max(self.max_seconds - self.run_seconds, 0.0)

    run_seconds: float = 0.0
    weights_step: int = 0  # the training step of the newest published weights
    weights_time: float = 0.0  # when they were published (time.time())


@dataclass
class _Published:
    model: Network | None = None
    version: int = 0
    step: int = 0
    at: float = 0.0
    timeline: list[tuple[int, AttentionTrace]] = field(default_factory=list)


class TrainingJob:
    """Trains by `plan` in a child process, from where `record` stands (None: an untrained run), until a budget is
    spent or `stop()` is called; the steps it trained join the record when the process hands its state back."""

    def __init__(self, plan: JobPlan, record: RunRecord | None = None, *,
                 on_end: Callable[["TrainingJob"], None] | None = None,
                 on_state: Callable[["TrainingJob", dict], None] | None = None) -> None:
        self.plan = plan
        self.record = record if record is not None else RunRecord.fresh(plan)
        self._probe = plan.probe
        self.on_end, self.on_state = on_end, on_state
        self.on_snapshot: Callable[["TrainingJob", dict], None] | None = None  # JobPlan.snapshot_every's states
        self._stop = threading.Event()
        self._commands: queue.SimpleQueue[ToWorker] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._status, self._message = "waiting", ""
        self._published = _Published()
        self._rate = (0.0, 0.0)
        self._run_seconds = 0.0
        # this job's progress, until it joins the record at the end
        self._step, self._elapsed = self.record.step, self.record.elapsed
        self._rows: list[dict] = []
        self._evals: list[dict] = []
        self._thread = threading.Thread(target=self._work, name="attention-studio-training", daemon=True)
        self.pid: int | None = None  # of the training process, once started

    # -- control (UI thread) ----------------------------------------------------------------------------------
    def start(self) -> "TrainingJob":
        with _jobs_lock:
            _live_jobs.add(self)
        self._publish_weights(self.record.state["model"], self.record.step)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the training process to stop after the current step."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def probe(self) -> str | None:
        """The sentence decoded every `plan.probe_every` steps; setting it applies from the next recording on."""
        return self._probe

    @probe.setter
    def probe(self, text: str | None) -> None:
        self._probe = text
        self._commands.put(ProbeChange(text=text))

    # -- reading (UI thread) ----------------------------------------------------------------------------------
    def snapshot(self, history_tail: int | None = None) -> JobSnapshot:
        with self._lock:
            rec, rows = self.record, self._rows
            if history_tail is None:
                hist = (*rec.history, *rows)
            elif history_tail <= len(rows):
                hist = tuple(rows[len(rows) - history_tail:])
            else:
                hist = (*rec.history[max(len(rec.history) - (history_tail - len(rows)), 0):], *rows)
            return JobSnapshot(status=self._status, message=self._message, step=self._step,
                               target_steps=self.plan.max_steps, elapsed=self._elapsed,
                               max_seconds=self.plan.max_seconds, steps_per_s=self._rate[0],
                               tokens_per_s=self._rate[1], history=hist, evals=(*rec.evals, *self._evals),
                               weights_version=self._published.version, run_seconds=self._run_seconds,
                               weights_step=self._published.step, weights_time=self._published.at)

    def latest_model(self) -> tuple[int, Network | None]:
        """(version, an eval-mode copy of the newest published weights, None before the first); never the training
        model itself."""
        with self._lock:
            return self._published.version, self._published.model

    def timeline(self) -> list[tuple[int, AttentionTrace]]:
        with self._lock:
            return list(self._published.timeline)

    # -- supervising thread -------------------------------------------------------------------------------------
    def _set(self, status: str, message: str = "") -> None:
        with self._lock:
            self._status, self._message = status, message

    def _publish_weights(self, state_dict: dict, step: int) -> None:
        model = model_from_weights(self.plan.model_cfg, state_dict)
        for p in model.parameters():
            p.requires_grad_(False)
        with self._lock:
            self._published.model = model
            self._published.version += 1
            self._published.step, self._published.at = step, time.time()

    def _work(self) -> None:
        try:
            if not training_slots.wait(self.plan.processes, self._stop.is_set):
                self._set("stopped", "stopped before it started")
                return
            try:
                self._supervise()
            finally:
                training_slots.release(self.plan.processes)
        except Exception as exc:  # the supervisor must report, never die silently
            self._set("failed", f"training failed: {type(exc).__name__}: {exc}")
        finally:
            with _jobs_lock:
                _live_jobs.discard(self)
            if self.on_end is not None:
                self.on_end(self)

    def _order(self) -> Order:
        with self._lock:
            last_probe = self._published.timeline[-1][0] if self._published.timeline else None
        plan = dataclasses.replace(self.plan, probe=self._probe,
                                   stop_rule=rule_to_meet(self.plan.stop_rule, self.record.evals))
        return Order(plan=plan, state=self.record.state, last_probe_step=last_probe)

    def _supervise(self) -> None:
        self._set("running")
        launched = launch_process()
        conn, self.pid = launched.conn, launched.pid
        ended = committed = False
        try:
            send(conn, self._order())
            stop_sent = False
            while not ended:
                while not self._commands.empty():
                    send(conn, self._commands.get())
                if not stop_sent and self._stop.is_set():
                    send(conn, Stop())
                    stop_sent = True
                if conn.poll(0.05):
                    message = receive(conn)
                    ended = isinstance(message, Ended)
                    assert not isinstance(message, (Order, Stop, ProbeChange))  # the worker sends FromWorker
                    committed = self._handle(message)
        except (EOFError, OSError):
            pass  # the process died; reported below
        finally:
            conn.close()
            launched.reap()
        if not ended:
            self._set("failed", "the training process ended unexpectedly")
        if not committed:
            with self._lock:  # the training state of this job never came back: the run stays where it was
                moved = self._step != self.record.step
                self._step, self._elapsed = self.record.step, self.record.elapsed
                self._rows, self._evals = [], []
                if moved:
                    self._message += f"; the run is back at step {self.record.step:,}"

    def _handle(self, message: FromWorker) -> bool:
        """Apply one report of the training process; True when it handed back the training state at its end."""
        if isinstance(message, Progress):
            with self._lock:
                self._rows.extend(message.rows)
                self._step, self._elapsed, self._run_seconds = message.step, message.elapsed, message.run_seconds
                self._rate = (message.steps_per_s, message.tokens_per_s)
        elif isinstance(message, EvalDone):
            with self._lock:
                self._evals.append(message.metrics)
        elif isinstance(message, Weights):
            self._publish_weights(message.state_dict, message.step)
        elif isinstance(message, TrainingState):
            if message.snapshot:
                if self.on_snapshot is not None:
                    self.on_snapshot(self, message.state)
            elif self.on_state is not None:
                self.on_state(self, message.state)
        elif isinstance(message, ProbeTrace):
            with self._lock:
                self._published.timeline.append((message.step, message.trace))
        elif isinstance(message, Ended):
            with self._lock:
                self._rate = (0.0, 0.0)
                self._status, self._message = message.reason, message.message
                if message.state is None:
                    return False
                rec = self.record  # the job's steps join the run
                rec.history.extend(self._rows)
                rec.evals.extend(self._evals)
                rec.state = message.state
                self._rows, self._evals = [], []
                self._step, self._elapsed = rec.step, rec.elapsed
            return True
        return False
