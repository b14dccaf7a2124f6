"""Background training for the app: a worker thread, a stop event, and snapshots the UI polls.

The worker never touches UI code. It owns the Trainer; everything the UI reads (metrics, a copy of the
weights, the probe's attention timeline) is published under a lock as immutable snapshots.
"""
from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from .decoding import InputError, greedy_decode
from .model import Seq2SeqTransformer
from .trace import AttentionTrace
from .training import NonFiniteLossError, Trainer

MAX_CONCURRENT_JOBS = 2
_slots = threading.BoundedSemaphore(MAX_CONCURRENT_JOBS)
_registry_lock = threading.Lock()
_live_jobs: set["TrainingJob"] = set()


def running_jobs() -> int:
    """How many jobs hold or wait for a training slot in this process."""
    with _registry_lock:
        return len(_live_jobs)


@dataclass(frozen=True)
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


@dataclass
class _Published:
    model: Seq2SeqTransformer | None = None
    version: int = 0
    timeline: list[tuple[int, AttentionTrace]] = field(default_factory=list)


class TrainingJob:
    """Runs `trainer` on a daemon thread until a budget is spent, `stop()` is called or heartbeats stop."""

    def __init__(self, trainer: Trainer, *, max_steps: int, max_seconds: float | None = None,
                 probe: str | None = None, probe_every: int = 50, publish_every_s: float = 1.0,
                 idle_timeout_s: float | None = 60.0, on_end: Callable[["TrainingJob"], None] | None = None) -> None:
        self.trainer = trainer
        self.max_steps, self.max_seconds = max_steps, max_seconds
        self.probe, self.probe_every = probe, max(1, probe_every)
        self.publish_every_s, self.idle_timeout_s = publish_every_s, idle_timeout_s
        self.on_end = on_end
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._status, self._message = "waiting", ""
        self._published = _Published()
        self._rate = (0.0, 0.0)
        self._run_seconds = 0.0
        self._heartbeat = time.monotonic()
        self._thread = threading.Thread(target=self._work, name="attention-studio-training", daemon=True)

    # -- control (UI thread) ----------------------------------------------------------------------------------
    def start(self) -> "TrainingJob":
        with _registry_lock:
            _live_jobs.add(self)
        self._publish_weights()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the worker to stop after the current step."""
        self._stop.set()

    def heartbeat(self) -> None:
        """The UI is still there; without heartbeats for idle_timeout_s the job stops itself."""
        self._heartbeat = time.monotonic()

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- reading (UI thread) ----------------------------------------------------------------------------------
    def snapshot(self, history_tail: int | None = None) -> JobSnapshot:
        with self._lock:
            tr = self.trainer
            hist = tr.history if history_tail is None else tr.history[-history_tail:]
            return JobSnapshot(self._status, self._message, tr.step, self.max_steps, tr.elapsed, self.max_seconds,
                               self._rate[0], self._rate[1], tuple(hist), tuple(tr.evals), self._published.version,
                               self._run_seconds)

    def latest_model(self) -> tuple[int, Seq2SeqTransformer]:
        """(version, an eval-mode copy of the newest published weights); never the training model itself."""
        with self._lock:
            return self._published.version, self._published.model

    def timeline(self) -> list[tuple[int, AttentionTrace]]:
        with self._lock:
            return list(self._published.timeline)

    # -- worker -------------------------------------------------------------------------------------------------
    def _set(self, status: str, message: str = "") -> None:
        with self._lock:
            self._status, self._message = status, message

    def _publish_weights(self) -> None:
        model = copy.deepcopy(self.trainer.model).eval()
        for p in model.parameters():
            p.requires_grad_(False)
        with self._lock:
            self._published.model = model
            self._published.version += 1

    def _record_probe(self) -> None:
        if not self.probe:
            return
        model = self._published.model
        task = self.trainer.task
        try:
            result = greedy_decode(model, task.src_tokenizer, task.tgt_tokenizer, self.probe)
        except InputError:
            return
        with self._lock:
            self._published.timeline.append((self.trainer.step, result.trace))

    def _work(self) -> None:
        try:
            while not _slots.acquire(timeout=0.2):
                if self._stop.is_set():
                    self._set("stopped", "stopped before it started")
                    return
                if self._session_gone():
                    self._set("stopped", "stopped before it started: the browser session went away")
                    return
            try:
                self._train()
            finally:
                _slots.release()
        except Exception as exc:  # the worker must report, never die silently
            self._set("failed", f"training failed: {type(exc).__name__}: {exc}")
        finally:
            with _registry_lock:
                _live_jobs.discard(self)
            if self.on_end is not None:
                self.on_end(self)

    def _session_gone(self) -> bool:
        """No heartbeat for idle_timeout_s: the browser session that started the job went away."""
        return self.idle_timeout_s is not None and time.monotonic() - self._heartbeat > self.idle_timeout_s

    def _train(self) -> None:
        self._set("running")
        tr = self.trainer
        began = last_pub = time.perf_counter()
        window: list[tuple[float, int]] = []
        if tr.step == 0 or not self._published.timeline:
            self._record_probe()
        reason = "finished"
        while tr.step < self.max_steps:
            now = time.perf_counter()
            if self._stop.is_set():
                reason = "stopped"
                break
            if self.max_seconds is not None and now - began >= self.max_seconds:
                reason = "finished"
                break
            if self._session_gone():
                reason, msg = "stopped", "stopped: the browser session went away"
                self._set("stopped", msg)
                break
            try:
                stats = tr.train_step()  # appends to history; readers slice it, which is safe under the GIL
            except NonFiniteLossError as exc:
                self._publish_weights()
                self._set("failed", str(exc))
                return
            window = [w for w in window if now - w[0] < 3.0] + [(time.perf_counter(), stats.tokens)]
            span = max(window[-1][0] - window[0][0], 1e-6)
            with self._lock:
                self._run_seconds = time.perf_counter() - began
                if len(window) > 1:
                    self._rate = ((len(window) - 1) / span, sum(t for _, t in window[1:]) / span)
            if tr.step % tr.cfg.eval_every == 0:
                tr.evaluate()
            probe_due = tr.step % self.probe_every == 0
            if probe_due or time.perf_counter() - last_pub >= self.publish_every_s:
                self._publish_weights()
                last_pub = time.perf_counter()
            if probe_due:
                self._record_probe()
        if not tr.evals or tr.evals[-1].get("step") != tr.step:
            tr.evaluate()
        self._publish_weights()
        if not self._published.timeline or self._published.timeline[-1][0] != tr.step:
            self._record_probe()
        with self._lock:
            if self._status == "running":
                self._status = reason
