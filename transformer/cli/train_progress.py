"""`train`'s output and signals: the progress line on stderr, the metrics text, and Ctrl-C (or torchrun's signals)
asking training to stop after the current step."""
from __future__ import annotations

import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, TextIO

from ..train import StepStats, Trainer


class ProgressLine:
    """Training callback writing `step n/N  loss  acc  steps/s  time`: one updating line on a terminal."""

    def __init__(self, total: int, first_step: int, stream: TextIO) -> None:
        self.total, self.first_step, self.stream = total, first_step, stream
        self.tty = stream.isatty()
        self.began = self.last = time.perf_counter()
        self.pending = False
        self.signed = False

    def on_step_end(self, trainer: Trainer, stats: StepStats) -> None:
        now = time.perf_counter()
        due = now - self.last >= 0.2 if self.tty else stats.step % max(self.total // 10, 1) == 0
        if not due and stats.step < self.total:
            return
        self.last = now
        rate = (stats.step - self.first_step) / max(now - self.began, 1e-9)
        line = (f"step {stats.step}/{self.total}  loss {stats.loss:.4f}  acc {stats.accuracy:.3f}  "
                f"{rate:.1f} steps/s  {now - self.began:.1f}s")
        self.stream.write(f"\r{line:<78}" if self.tty else line + "\n")
        self.stream.flush()
        self.pending = self.tty

    def on_eval(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        self.finish()
        self.stream.write(f"eval at step {metrics['step']}: {metrics_text(metrics)}\n")
        if "bleu_signature" in metrics and not self.signed:
            self.stream.write(f"  ({metrics['bleu_signature']}, {metrics['chrf_signature']})\n")
            self.signed = True

    def finish(self) -> None:
        """End the updating line so the next output starts on its own line."""
        if self.pending:
            self.stream.write("\n")
            self.pending = False


def metrics_text(metrics: dict[str, Any]) -> str:
    """The figures of an evaluation, e.g. "loss 0.1234, token_accuracy 0.98"."""
    keys = ("loss", "token_accuracy", "exact_match", "determined_accuracy", "bleu", "chrf")
    return ", ".join(f"{k} {metrics[k]:.4g}" for k in keys if isinstance(metrics.get(k), (int, float)))


@contextmanager
def stop_on_ctrl_c(stop: threading.Event) -> Iterator[None]:
    """First Ctrl-C asks training to stop after the current step (then it is saved); a second one aborts."""
    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        sys.stderr.write("\nstopping after this step and saving (Ctrl-C again to abort)\n")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Under torchrun: SIGINT and SIGTERM (what torchrun sends its workers on Ctrl-C) stop after the current step.

    torchrun forwards a Ctrl-C as SIGINT then SIGTERM and kills what is still running 30 s later, so every signal
    only asks for the agreed stop; rank 0 then saves.
    """
    previous = {sig: signal.signal(sig, lambda signum, frame: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

