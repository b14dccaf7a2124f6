"""Long analyses (a head sweep, attribution over every step, patching, corpus statistics) off the script thread: a
progress bar with the time left and a Cancel button, one such job per session at a time. `analysis_result`,
`can_start` and `start_button` are the flow every such view follows: the kept result, the button that asks for it,
the progress while it runs, and what to say when it was cancelled or refused its input.

The worker thread never calls Streamlit: it runs the analysis with a progress callback that records the fraction
done and raises `Cancelled` once the user pressed Cancel. A fragment polls the job twice a second and reruns the
page when it ends, so the result is drawn by the page like any other; a job whose first part the page can already
draw (the current head's overview before the layer's other heads) says so with `part_ready()`, and the page reruns
once then too.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import streamlit as st

from transformer.analysis import Cancelled
from transformer.decode import InputError
from ui.server import refuse, speaker_only

JOB_KEY = "studio_background_job"
RESULTS_KEY = "studio_analyses"
RESULTS_KEPT = 8  # finished analyses a session keeps (sweeps, agreement), oldest dropped first
WAIT_S = 2.0  # an analysis that ends within this is drawn at once; a longer one gets a progress bar and Cancel


@dataclass
class BackgroundJob:
    """One analysis running for a session: what it is, how far it got, its result or error."""

    name: str  # what the bar says, e.g. "Ablating 576 heads"
    identity: tuple  # which model, input and analysis it is for (the page asks by this)
    fraction: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    cancel: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None
    parts: int = 0  # parts the page can draw before the end (`part_ready`)
    parts_drawn: int = 0  # of which the page has rerun for

    def rerun_due(self) -> bool:
        """Whether the page should rerun now: the job ended, or a part became ready since the last rerun."""
        if self.done.is_set() or self.parts != self.parts_drawn:
            self.parts_drawn = self.parts
            return True
        return False

    def progress(self, fraction: float) -> None:
        """The analysis' progress callback (worker thread): record, and stop if cancelled."""
        self.fraction = min(max(float(fraction), 0.0), 1.0)
        if self.cancel.is_set():
            raise Cancelled("cancelled")

    def time_left(self) -> float | None:
        """Seconds left at the pace so far (None before any progress)."""
        if self.fraction <= 0:
            return None
        elapsed = time.perf_counter() - self.started
        return elapsed * (1 - self.fraction) / self.fraction


_WORKER = threading.local()  # the job a worker thread runs


def part_ready() -> None:
    """Called by an analysis in its job's thread: a part of its result is kept and the page can draw it now."""
    job = getattr(_WORKER, "job", None)
    if job is not None:
        job.parts += 1


def current_job() -> BackgroundJob | None:
    """The session's job, running or ended and not yet collected."""
    return st.session_state.get(JOB_KEY)


def start_job(name: str, identity: tuple, run: Callable[[Callable[[float], None]], Any]) -> BackgroundJob | None:
    """Start `run(progress)` in a thread for this session; None (and a message) while another job runs."""
    job = current_job()
    if job is not None and not job.done.is_set():
        st.info(f"{job.name} is still running in this session: wait for it or cancel it first.",
                icon=":material/hourglass_top:")
        return None
    job = BackgroundJob(name, identity)

    def work() -> None:
        _WORKER.job = job
        try:
            job.result = run(job.progress)
        except BaseException as exc:  # noqa: BLE001 - handed to the page, which says what went wrong
            job.error = exc
        finally:
            job.done.set()

    st.session_state[JOB_KEY] = job
    threading.Thread(target=work, name=f"studio-{name}", daemon=True).start()
    return job


def kept_result(identity: tuple) -> Any:
    """A finished analysis this session kept, or None."""
    return st.session_state.get(RESULTS_KEY, {}).get(identity)


def keep_result(identity: tuple, result: Any) -> None:
    """Keep a finished analysis for the session, so reruns draw it without computing it again."""
    kept = st.session_state.setdefault(RESULTS_KEY, {})
    kept[identity] = result
    while len(kept) > RESULTS_KEPT:
        kept.pop(next(iter(kept)))


def job_running(identity: tuple) -> bool:
    """Whether the session's job for `identity` is still running."""
    job = current_job()
    return job is not None and job.identity == identity and not job.done.is_set()


def background_result(identity: tuple, name: str, run: Callable[[Callable[[float], None]], Any], *, key: str,
                      start: bool) -> tuple[Any, BaseException | None] | None:
    """(result, error) of the analysis `identity`: collected from the session's ended job, or, when `start` and no
    job of this identity runs, started now (returned at once if it ends within WAIT_S, else drawn as a progress bar
    with the time left and Cancel). None while there is no result."""
    ended = collect(identity)
    if ended is not None:
        return ended
    if not job_running(identity):
        if not start:
            return None
        job = start_job(name, identity, run)
        if job is None:
            return None
        if job.done.wait(WAIT_S):  # a small model is done at once: no bar
            return collect(identity)
    show_job_progress(identity, key)
    return None


def collect(identity: tuple) -> tuple[Any, BaseException | None] | None:
    """(result, error) of the session's ended job for `identity`, taken out of the session; None otherwise."""
    job = current_job()
    if job is None or job.identity != identity or not job.done.is_set():
        return None
    st.session_state.pop(JOB_KEY, None)
    return job.result, job.error


def _cancel() -> None:
    job = current_job()
    if job is not None:
        job.cancel.set()


@st.fragment(run_every=0.5)
def show_job_progress(identity: tuple, key: str) -> None:
    """The running job's bar (fraction, time left) and its Cancel button; reruns the page once the job ends."""
    job = current_job()
    if job is None or job.identity != identity:
        return
    if job.rerun_due():
        st.rerun(scope="app")
    left = job.time_left()
    when = "estimating the time left…" if left is None else f"about {left:,.0f} s left"
    bar, stop = st.columns([5, 1], vertical_alignment="center")
    bar.progress(job.fraction, text=f"{job.name}: {job.fraction:.0%} · {when}")
    stop.button("Cancel", key=f"{key}_cancel", on_click=_cancel, icon=":material/stop:", width="stretch")


@dataclass(frozen=True)
class JobTexts:
    """What an analysis' view says when its job ends without a result: cancelled, or its input refused."""

    cancelled: str = "Cancelled."
    cancelled_icon: str = ":material/stop:"
    refused: str = "{error}"  # formatted with the error
    refused_icon: str = ":material/edit_note:"
    refusals: tuple[type[BaseException], ...] = (InputError,)


def analysis_result(identity: tuple, name: str, run: Callable[[Callable[[float], None]], Any], *, key: str,
                    texts: JobTexts = JobTexts(), start: bool | None = None,
                    on_cancel: Callable[[], None] | None = None) -> Any:
    """The result of the analysis `identity`: kept from an earlier run, or collected from the session's job and kept.
    The job starts when `start` (by default: when `start_button` asked for this identity under `key`); while it runs
    its progress and Cancel are drawn. None while there is no result; a cancelled job or a refused input says so
    (`texts`; `on_cancel` is called too), any other error is raised."""
    result = kept_result(identity)
    if result is not None:
        return result
    if start is None:  # the click is kept as a flag: the page may rerun once (its link changed) before it gets here
        start = st.session_state.pop(_flag(key), None) == identity
    ended = background_result(identity, name, run, key=key, start=start)
    if ended is None:
        return None
    result, error = ended
    if isinstance(error, Cancelled):
        st.info(texts.cancelled, icon=texts.cancelled_icon)
        if on_cancel is not None:
            on_cancel()
        return None
    if isinstance(error, texts.refusals):
        st.warning(texts.refused.format(error=error), icon=texts.refused_icon)
        return None
    if error is not None:
        raise error
    keep_result(identity, result)
    return result


def can_start(*identities: tuple) -> bool:
    """Whether to offer the button: no job of these identities runs, and the session may start one (an audience
    session is told why instead)."""
    return not any(job_running(identity) for identity in identities) and not refuse("sweep")


def start_button(label: str, identity: tuple, *, key: str, button_key: str | None = None, icon: str,
                 where: Any = st, **kwargs: Any) -> None:
    """The button that asks for the analysis `identity`, read by `analysis_result(..., key=key)` (its widget key:
    `button_key`, by default key + "_run"; drawn in `where`, a column or the page)."""
    where.button(label, key=button_key or f"{key}_run", icon=icon, on_click=_request, args=(_flag(key), identity),
                 **kwargs)


def _flag(key: str) -> str:
    return f"{key}_requested"


@speaker_only
def _request(flag: str, identity: tuple) -> None:
    """on_click of a start button: remember which analysis (model, input, settings) was asked for."""
    st.session_state[flag] = identity
