"""The training process behind a `TrainingJob`: trains, and reports progress, weights and probe traces.

It runs in a child process (forked from a server that has already imported torch), so the trainer never
competes with the app's page scripts for the GIL. It talks to the server over one pipe in the messages of
`job_messages`.

The probe is recorded every `JobPlan.probe_every` steps and, when `probe_frames` is set, often enough that the run's
budget (steps or seconds, whichever is nearer) yields about that many recordings: a 15-s run gets a timeline too.
"""
from __future__ import annotations

import time
from multiprocessing.connection import Connection

import torch

from .distributed import DistEnv
from .job_messages import (
    Ended,
    EvalDone,
    Order,
    ProbeChange,
    ProbeTrace,
    Progress,
    Stop,
    TrainingState,
    Weights,
    receive,
    send,
)
from .job_ranks import Ranks, make_trainer
from .probe import probe_trace
from .stage import CLEAN, StopWhenClean
from .trainer import NonFiniteLossError

PROGRESS_EVERY_S = 0.2


class _Worker:
    def __init__(self, conn: Connection, order: Order, env: DistEnv | None = None) -> None:
        self.conn, self.plan = conn, order.plan
        self.probe, self.last_probe_step = order.plan.probe, order.last_probe_step
        self.trainer = make_trainer(order, env)
        self.sent_rows = len(self.trainer.history)
        self.began = time.perf_counter()
        self.window: list[tuple[float, int]] = []
        self.rate = (0.0, 0.0)
        self.end_note = ""
        plan = self.plan
        frames = max(plan.probe_frames, 0)
        span = max(plan.max_steps - self.trainer.step, 1)
        self.probe_every = min(plan.probe_every, max(span // frames, 1)) if frames else plan.probe_every
        self.probe_every_s = plan.max_seconds / frames if frames and plan.max_seconds else None
        self.last_probe_at = self.began
        self.rule = StopWhenClean(plan.stop_rule) if plan.stop_rule is not None else None  # the stage demo
        if self.rule is not None:
            self.trainer.callbacks.append(self.rule)
        self.sent_check: dict | None = None

    def stop_requested(self) -> bool:
        """Apply the parent's messages; True when it asked to stop or went away."""
        while self.conn.poll():
            try:
                message = receive(self.conn)
            except EOFError:
                return True
            if isinstance(message, Stop):
                return True
            if isinstance(message, ProbeChange):
                self.probe = message.text
        return False

    def progress(self) -> None:
        tr = self.trainer
        rows = tr.history[self.sent_rows:]
        self.sent_rows = len(tr.history)
        send(self.conn, Progress(step=tr.step, elapsed=tr.elapsed, run_seconds=time.perf_counter() - self.began,
                                 steps_per_s=self.rate[0], tokens_per_s=self.rate[1], rows=rows))

    def publish(self) -> None:
        send(self.conn, Weights(state_dict=self.trainer.model.state_dict(), step=self.trainer.step))

    def record_probe(self) -> None:
        if not self.probe:
            return
        trace = probe_trace(self.trainer, self.probe)
        if trace is None:
            return
        send(self.conn, ProbeTrace(step=self.trainer.step, trace=trace))
        self.last_probe_step = self.trainer.step
        self.last_probe_at = time.perf_counter()

    def probe_due(self, now: float) -> bool:
        """Every `probe_every` steps, or when the budget's share of seconds per recording has passed."""
        if self.trainer.step % self.probe_every == 0:
            return True
        return self.probe_every_s is not None and now - self.last_probe_at >= self.probe_every_s

    def evaluate(self) -> None:
        send(self.conn, EvalDone(metrics=self.trainer.evaluate()))

    def step(self) -> None:
        stats = self.trainer.train_step()
        now = time.perf_counter()
        self.window = [w for w in self.window if now - w[0] < 3.0] + [(now, stats.tokens)]
        span = max(self.window[-1][0] - self.window[0][0], 1e-6)
        if len(self.window) > 1:
            self.rate = ((len(self.window) - 1) / span, sum(t for _, t in self.window[1:]) / span)

    def run(self) -> str:
        """Train until a budget is spent or the parent says stop; returns "finished" or "stopped"."""
        plan, tr = self.plan, self.trainer
        if tr.step == 0 or self.last_probe_step is None:
            self.record_probe()
        last_pub = last_progress = last_state = time.perf_counter()
        reason = "finished"
        self.end_note = f"reached its target of {plan.max_steps:,} steps"
        while tr.step < plan.max_steps:
            if self.stop_requested():
                reason, self.end_note = "stopped", ""
                break
            if plan.max_seconds is not None and time.perf_counter() - self.began >= plan.max_seconds:
                self.end_note = (f"the {plan.max_seconds:,.0f}-s time budget ended the run at step {tr.step:,} "
                                 f"of {plan.max_steps:,}")
                break
            self.step()
            if plan.snapshot_every and tr.step % plan.snapshot_every == 0:
                send(self.conn, TrainingState(state=tr.state(), snapshot=True))
            if tr.step % tr.cfg.eval_every == 0:
                self.evaluate()
            if self.rule is not None and self.rule_ended():
                break
            now = time.perf_counter()
            if now - last_progress >= PROGRESS_EVERY_S:
                self.progress()
                last_progress = now
            probe_due = self.probe_due(now)
            if probe_due or now - last_pub >= plan.publish_every_s:
                self.publish()
                last_pub = now
            if probe_due:
                self.record_probe()
            if plan.autosave_every_s is not None and now - last_state >= plan.autosave_every_s:
                send(self.conn, TrainingState(state=tr.state()))
                last_state = now
        if not tr.evals or tr.evals[-1].get("step") != tr.step:
            self.evaluate()
        if self.rule is not None and tr.done != CLEAN and reason == "finished":
            self.end_note += f"; {self.rule.note(tr)}"
        return reason

    def rule_ended(self) -> bool:
        """Send the stage rule's newest check; True (with the note) when it found the picture clean."""
        if self.rule is None:
            return False
        check = self.rule.own
        if check is not None and check is not self.sent_check:
            send(self.conn, EvalDone(metrics=check))
            self.sent_check = check
        if self.trainer.done != CLEAN:
            return False
        self.end_note = self.rule.note(self.trainer)
        return True

    def finish(self, reason: str, message: str) -> None:
        self.progress()
        self.publish()
        if self.last_probe_step != self.trainer.step:
            self.record_probe()
        send(self.conn, Ended(reason=reason, message=message, state=self.trainer.state()))


def main(conn: Connection) -> None:
    """Entry point of the training process: read the order, train, report; never raises."""
    try:
        order = receive(conn)
        if not isinstance(order, Order):
            raise TypeError(f"expected an Order first, got {type(order).__name__}")
        if order.plan.threads > 0:
            torch.set_num_threads(order.plan.threads)
        ranks = Ranks(order.plan.processes, torch.get_num_threads())
        worker = _Worker(conn, order, ranks.start(order, conn))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which shows it
        _report_failure(conn, exc)
        return
    try:
        reason = worker.run()
        message = worker.end_note
    except NonFiniteLossError as exc:  # the trainer rolled its weights back; keep those
        reason, message = "failed", str(exc)
    except Exception as exc:  # noqa: BLE001 - between steps the trainer is consistent: hand back what it has
        reason, message = "failed", f"training failed: {type(exc).__name__}: {exc}"
    ranks.finish(worker.trainer, reason)
    try:
        worker.finish(reason, message)
    except BaseException as exc:  # noqa: BLE001
        _report_failure(conn, exc)


def _report_failure(conn: Connection, exc: BaseException) -> None:
    try:
        send(conn, Ended(reason="failed", message=f"training failed: {type(exc).__name__}: {exc}", state=None))
    except (OSError, EOFError):
        pass  # the parent is gone
