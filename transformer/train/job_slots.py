"""The server's training slots: at most `MAX_CONCURRENT_JOBS` jobs train at once, and together they run at most one
training process per core (a job on N processes needs N), so a 2-process job on a 2-core machine trains alone.

Jobs start in the order they asked (first come, first served), so a job waiting for two free cores is not
overtaken forever by one-process jobs that would fit into one.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable

MAX_CONCURRENT_JOBS = 2
_POLL_S = 0.2


def process_capacity() -> int:
    """Training processes that may run at once: one per core, and never fewer than `MAX_CONCURRENT_JOBS`."""
    return max(os.cpu_count() or 1, MAX_CONCURRENT_JOBS)


class TrainingSlots:
    """Counts the jobs and processes training now; `wait` blocks a job until it may start, in arrival order."""

    def __init__(self, max_jobs: int = MAX_CONCURRENT_JOBS, max_processes: int | None = None) -> None:
        self.max_jobs, self.max_processes = max_jobs, max_processes or process_capacity()
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._jobs = self._processes = 0

    def need(self, processes: int) -> int:
        """The processes a job of `processes` takes (one that asks for more than there are takes them all)."""
        return min(max(processes, 1), self.max_processes)

    def usage(self) -> tuple[int, int]:
        """(jobs, processes) training now."""
        with self._cond:
            return self._jobs, self._processes

    def waiting(self) -> int:
        """Jobs waiting to start."""
        with self._cond:
            return len(self._queue)

    def wait(self, processes: int, give_up: Callable[[], bool]) -> bool:
        """Block until a job of `processes` may train (True; `release` it after), or `give_up()` says so (False)."""
        n, ticket = self.need(processes), object()
        with self._cond:
            self._queue.append(ticket)
            try:
                while True:
                    free = self._jobs < self.max_jobs and self._processes + n <= self.max_processes
                    if self._queue[0] is ticket and free:
                        self._jobs, self._processes = self._jobs + 1, self._processes + n
                        return True
                    if give_up():
                        return False
                    self._cond.wait(_POLL_S)
            finally:
                self._queue.remove(ticket)
                self._cond.notify_all()

    def release(self, processes: int) -> None:
        """A job that `wait` let train has ended."""
        with self._cond:
            self._jobs -= 1
            self._processes -= self.need(processes)
            self._cond.notify_all()


training_slots = TrainingSlots()
