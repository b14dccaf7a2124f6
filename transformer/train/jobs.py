"""Background training for the app: a training process per job, a supervising thread, snapshots the UI polls.

The training itself runs in a child process (`job_worker`), forked from a server process that has imported
torch already: a thread in the server would fight the page scripts for the GIL around each of its ~200 torch
ops a step (measured: the Train page open cut in-app training to 9–26 % of the CLI's speed). A supervising
thread per job waits for a training slot, starts the process, forwards Stop and probe changes, and turns the
child's reports into what the UI reads: metrics, an eval-mode copy of the newest weights and the probe's
attention timeline, published under a lock as immutable snapshots. At the end the child hands back the full
training state (weights, optimizer, step), so Resume and Save continue exactly where it stopped.
"""
from __future__ import annotations

import copy
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from ..decode import AttentionTrace
from ..model import Seq2SeqTransformer, build_model
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
from .job_slots import MAX_CONCURRENT_JOBS, training_slots
from .stage import stop_rule_of
from .trainer import Trainer

__all__ = ["MAX_CONCURRENT_JOBS", "JobSnapshot", "Launched", "TrainingJob", "fork_server", "launch_process",
           "running_jobs"]
_registry_lock = threading.Lock()
_live_jobs: set["TrainingJob"] = set()


def running_jobs() -> int:
    """How many jobs hold or wait for a training slot in this process."""
    with _registry_lock:
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
    model: Seq2SeqTransformer | None = None
    version: int = 0
    step: int = 0
    at: float = 0.0
    timeline: list[tuple[int, AttentionTrace]] = field(default_factory=list)


class TrainingJob:
    """Trains `trainer` in a child process until a budget is spent or `stop()` is called."""

    def __init__(self, trainer: Trainer, *, max_steps: int, max_seconds: float | None = None,
                 probe: str | None = None, probe_every: int = 50, publish_every_s: float = 1.0,
                 threads: int = 0, processes: int = 1,
                 on_end: Callable[["TrainingJob"], None] | None = None, probe_frames: int = 0,
                 autosave_every_s: float | None = None,
                 on_state: Callable[["TrainingJob", dict], None] | None = None) -> None:
        self.trainer = trainer
        self.max_steps, self.max_seconds = max_steps, max_seconds
        self._probe, self.probe_every = probe, max(1, probe_every)
        self.publish_every_s, self.threads = publish_every_s, threads
        self.on_end, self.on_state = on_end, on_state
        self.processes = processes  # data-parallel processes (torch.distributed, gloo); `threads` is split among them
        self.probe_frames, self.autosave_every_s = probe_frames, autosave_every_s
        self._stop = threading.Event()
        self._commands: queue.SimpleQueue[ToWorker] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._status, self._message = "waiting", ""
        self._published = _Published()
        self._rate = (0.0, 0.0)
        self._run_seconds = 0.0
        self._thread = threading.Thread(target=self._work, name="attention-studio-training", daemon=True)
        self.pid: int | None = None  # of the training process, once started
        self._restored = False  # the training process handed its final state back

    # -- control (UI thread) ----------------------------------------------------------------------------------
    def start(self) -> "TrainingJob":
        with _registry_lock:
            _live_jobs.add(self)
        self._publish_model(copy.deepcopy(self.trainer.model), self.trainer.step)
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
        """The sentence decoded every `probe_every` steps; setting it applies from the next recording on."""
        return self._probe

    @probe.setter
    def probe(self, text: str | None) -> None:
        self._probe = text
        self._commands.put(ProbeChange(text=text))

    # -- reading (UI thread) ----------------------------------------------------------------------------------
    def snapshot(self, history_tail: int | None = None) -> JobSnapshot:
        with self._lock:
            tr = self.trainer
            hist = tr.history if history_tail is None else tr.history[-history_tail:]
            return JobSnapshot(status=self._status, message=self._message, step=tr.step, target_steps=self.max_steps,
                               elapsed=tr.elapsed, max_seconds=self.max_seconds, steps_per_s=self._rate[0],
                               tokens_per_s=self._rate[1], history=tuple(hist), evals=tuple(tr.evals),
                               weights_version=self._published.version, run_seconds=self._run_seconds,
                               weights_step=self._published.step, weights_time=self._published.at)

    def latest_model(self) -> tuple[int, Seq2SeqTransformer]:
        """(version, an eval-mode copy of the newest published weights); never the training model itself."""
        with self._lock:
            return self._published.version, self._published.model

    def timeline(self) -> list[tuple[int, AttentionTrace]]:
        with self._lock:
            return list(self._published.timeline)

    # -- supervising thread -------------------------------------------------------------------------------------
    def _set(self, status: str, message: str = "") -> None:
        with self._lock:
            self._status, self._message = status, message

    def _publish_model(self, model: Seq2SeqTransformer, step: int) -> None:
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
        with self._lock:
            self._published.model = model
            self._published.version += 1
            self._published.step, self._published.at = step, time.time()

    def _publish_weights(self, state_dict: dict, step: int) -> None:
        model = build_model(self.trainer.model_cfg)
        model.load_state_dict(state_dict)
        self._publish_model(model, step)

    def _work(self) -> None:
        try:
            if not training_slots.wait(self.processes, self._stop.is_set):
                self._set("stopped", "stopped before it started")
                return
            try:
                self._supervise()
            finally:
                training_slots.release(self.processes)
        except Exception as exc:  # the supervisor must report, never die silently
            self._set("failed", f"training failed: {type(exc).__name__}: {exc}")
        finally:
            with _registry_lock:
                _live_jobs.discard(self)
            if self.on_end is not None:
                self.on_end(self)

    def _order(self) -> Order:
        tr = self.trainer
        with self._lock:
            last_probe = self._published.timeline[-1][0] if self._published.timeline else None
        return Order(task=tr.task, model_cfg=tr.model_cfg, train_cfg=tr.cfg, state=tr.state(),
                     max_steps=self.max_steps, max_seconds=self.max_seconds, probe=self._probe,
                     probe_every=self.probe_every, publish_every_s=self.publish_every_s, last_probe_step=last_probe,
                     threads=self.threads, processes=self.processes, probe_frames=self.probe_frames,
                     autosave_every_s=self.autosave_every_s, stop_rule=stop_rule_of(tr))

    def _supervise(self) -> None:
        tr = self.trainer
        at_start = (tr.step, tr.elapsed, len(tr.history), len(tr.evals))
        self._set("running")
        launched = launch_process()
        conn, self.pid = launched.conn, launched.pid
        ended = False
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
                    ended = self._handle(receive(conn))
        except (EOFError, OSError):
            pass  # the process died; reported below
        finally:
            conn.close()
            launched.reap()
        if not ended:
            self._set("failed", "the training process ended unexpectedly")
        if tr.step != at_start[0] and not self._restored:
            with self._lock:  # the weights of this job never came back: back to where it began
                tr.step, tr.elapsed = at_start[0], at_start[1]
                del tr.history[at_start[2]:], tr.evals[at_start[3]:]
                self._message += f"; the run is back at step {tr.step:,}"

    def _handle(self, message: FromWorker) -> bool:
        """Apply one report of the training process; True at its last one."""
        tr = self.trainer
        if isinstance(message, Progress):
            with self._lock:
                tr.history.extend(message.rows)
                tr.step, tr.elapsed, self._run_seconds = message.step, message.elapsed, message.run_seconds
                self._rate = (message.steps_per_s, message.tokens_per_s)
        elif isinstance(message, EvalDone):
            with self._lock:
                tr.evals.append(message.metrics)
        elif isinstance(message, Weights):
            self._publish_weights(message.state_dict, message.step)
        elif isinstance(message, TrainingState):
            if self.on_state is not None:
                self.on_state(self, message.state)
        elif isinstance(message, ProbeTrace):
            with self._lock:
                self._published.timeline.append((message.step, message.trace))
        elif isinstance(message, Ended):
            with self._lock:
                if message.state is not None:
                    tr.restore(message.state)
                    self._restored = True
                self._rate = (0.0, 0.0)
                self._status, self._message = message.reason, message.message
            return True
        return False
