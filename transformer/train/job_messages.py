"""The messages between the app's server and a training process: frozen dataclasses, built by keyword.

Parent and child talk over one pipe, in pickled messages (our own objects between our own processes; no file is
ever unpickled):

    parent -> child: an `Order` first, then `Stop` or `ProbeChange` at any time
    child -> parent: `Started` first (from `job_server`), then `Progress` · `EvalDone` · `Weights` · `ProbeTrace`
                     · `TrainingState` every `JobPlan.autosave_every_s` · `Ended` last
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Union

from ..decode import AttentionTrace
from .job_plan import JobPlan


@dataclass(frozen=True, kw_only=True)
class Order:
    """Everything the child needs to train: the job's plan and where training stands."""

    plan: JobPlan  # as this job runs it: the probe as it is now, the stop rule only while it is still to be met
    state: dict[str, Any]  # `Trainer.state()`: weights, optimizer, step, training seconds
    last_probe_step: int | None  # the newest step the timeline has a probe trace for


@dataclass(frozen=True, kw_only=True)
class Stop:
    """Stop after the current step and hand the training state back."""


@dataclass(frozen=True, kw_only=True)
class ProbeChange:
    """Record `text` (None: nothing) as the probe from the next recording on."""

    text: str | None


@dataclass(frozen=True, kw_only=True)
class Started:
    """The fork server's first word on a new connection: the training process's pid."""

    pid: int


@dataclass(frozen=True, kw_only=True)
class Progress:
    """Where training stands, and the history rows recorded since the last `Progress`."""

    step: int
    elapsed: float  # training seconds of the run so far (all its jobs)
    run_seconds: float  # wall seconds of this process so far
    steps_per_s: float
    tokens_per_s: float
    rows: list[dict]


@dataclass(frozen=True, kw_only=True)
class EvalDone:
    """One evaluation's metrics (with their step)."""

    metrics: dict


@dataclass(frozen=True, kw_only=True)
class Weights:
    """The newest weights, for the pages to decode with."""

    state_dict: dict[str, Any]
    step: int


@dataclass(frozen=True, kw_only=True)
class ProbeTrace:
    """The probe sentence decoded at `step`."""

    step: int
    trace: AttentionTrace


@dataclass(frozen=True, kw_only=True)
class TrainingState:
    """The full training state mid-run (`Trainer.state()`), for the server to autosave, or (`snapshot`) to keep
    as a weight snapshot (`JobPlan.snapshot_every`)."""

    state: dict[str, Any]
    snapshot: bool = False


@dataclass(frozen=True, kw_only=True)
class Ended:
    """The last message: how the run ended and the training state to continue from (None if there is none)."""

    reason: str  # "finished", "stopped" or "failed"
    message: str
    state: dict[str, Any] | None


ToWorker = Union[Order, Stop, ProbeChange]
FromWorker = Union[Started, Progress, EvalDone, Weights, ProbeTrace, TrainingState, Ended]


def send(conn: Connection, message: ToWorker | FromWorker) -> None:
    """Write one message to the pipe."""
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def receive(conn: Connection) -> ToWorker | FromWorker:
    """Read one message from the pipe (only ever one of our own processes writes to it)."""
    return pickle.loads(conn.recv_bytes())
