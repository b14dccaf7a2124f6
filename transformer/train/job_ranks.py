"""The app's training job on several local processes: the job's process is rank 0 and forks the other ranks.

The followers get the same `Order` (the job's plan and training state) by fork, so every rank starts from the same
weights, optimizer moments and step; they meet in a gloo group through a file in a private temporary folder.
Rank 0 runs the job's usual loop (reports, probes, budgets, Stop) with a `DistributedTrainer`, whose every step
the followers take with it; when it ends it releases them and waits for them.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import tempfile
import time
from multiprocessing.connection import Connection

from .distributed import DistEnv, DistributedTrainer, start_process_group, stop_process_group
from .job_messages import Order
from .trainer import Trainer


class Ranks:
    """The follower processes of one job (none for a one-process job)."""

    def __init__(self, processes: int, threads: int) -> None:
        self.processes, self.threads = processes, threads
        self.pids: list[int] = []
        self.folder: str | None = None

    def start(self, order: Order, conn: Connection) -> DistEnv | None:
        """Fork ranks 1..N-1 (each trains as a follower, then exits) and join their group as rank 0."""
        if self.processes <= 1:
            return None
        self.folder = tempfile.mkdtemp(prefix="attention-studio-ranks-")
        init = f"file://{os.path.join(self.folder, 'group')}"
        for rank in range(1, self.processes):
            pid = os.fork()
            if pid == 0:  # a follower: never returns
                conn.close()
                _die_with_parent()
                os._exit(self._follow(order, rank, init))
            self.pids.append(pid)
        env = DistEnv(rank=0, world=self.processes, local_rank=0, local_world=self.processes)
        start_process_group(env, init_method=init, cores=self.threads)
        return env

    def _follow(self, order: Order, rank: int, init: str) -> int:
        try:
            env = DistEnv(rank=rank, world=self.processes, local_rank=rank, local_world=self.processes)
            start_process_group(env, init_method=init, cores=self.threads)
            trainer = make_trainer(order, env)
            assert isinstance(trainer, DistributedTrainer)  # with an env
            trainer.follow()
            return 0
        except BaseException:  # noqa: BLE001 - rank 0 sees a lost peer and reports; nothing to print here
            return 1
        finally:
            with contextlib.suppress(Exception):
                stop_process_group()

    def finish(self, trainer: Trainer, reason: str) -> None:
        """Release the followers (after a normal end), wait for them (killing stragglers) and leave the group."""
        if isinstance(trainer, DistributedTrainer) and reason in ("finished", "stopped"):
            with contextlib.suppress(Exception):
                trainer.release(reason)
        deadline = time.monotonic() + 10
        for pid in self.pids:
            while os.waitpid(pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.02)
        self.pids = []
        stop_process_group()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def _die_with_parent() -> None:
    """Linux: the kernel kills this process when rank 0 (its parent) ends, however it ends."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def make_trainer(order: Order, env: DistEnv | None) -> Trainer:
    """The order's trainer, restored to its state: plain, or one rank of a distributed job (the only place a job's
    `Trainer` is built: the server keeps a plain `RunRecord`)."""
    plan = order.plan
    if env is None:
        trainer = Trainer(plan.task, plan.model_cfg, plan.train_cfg)
    else:
        trainer = DistributedTrainer(plan.task, plan.model_cfg, plan.train_cfg, env=env)
    trainer.restore(order.state)
    return trainer
