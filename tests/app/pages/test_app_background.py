"""A long analysis runs off the script thread: the page shows a progress bar with the time left and a Cancel button,
one job per session; Cancel stops it and says so; the job's progress callback never touches Streamlit."""
from __future__ import annotations

import threading
import time

import pytest

import ui.views.features.ablation as ablation
import ui.views.kit.background as background
from tests.helpers.app_session import assert_no_exception, open_app, texts
from transformer.analysis import Cancelled
from ui.views.kit.background import BackgroundJob


def _crawl(started: threading.Event, progress) -> None:
    """A slow analysis: says it started, then reports progress until the progress callback raises Cancelled."""
    started.set()
    for i in range(1, 10_000):
        progress(i / 10_000)  # raises Cancelled once Cancel was pressed
        time.sleep(0.01)
    raise AssertionError("never cancelled")


def _rerun_until(at, shown, tries: int = 40) -> None:
    """Rerun the page a quarter second apart until `shown()` (a background job's end is drawn by a later run)."""
    for _ in range(tries):
        if shown():
            return
        time.sleep(0.25)
        at.run()


def test_a_job_reports_its_fraction_and_time_left_and_stops_when_cancelled():
    job = BackgroundJob("Ablating 4 heads", ("id",))
    assert job.time_left() is None
    job.started -= 10  # ten seconds in
    job.progress(0.25)
    assert job.fraction == 0.25 and job.time_left() == pytest.approx(30, rel=0.01)
    job.cancel.set()
    with pytest.raises(Cancelled):
        job.progress(0.5)


def test_a_part_ready_in_the_jobs_thread_reruns_the_page_once_and_its_end_again():
    job = BackgroundJob("Summarising layer 1", ("id",))
    assert not job.rerun_due()

    def analysis() -> None:  # what start_job's thread does around the analysis
        background._WORKER.job = job
        background.part_ready()  # e.g. the current head's overview is kept: the page can draw it

    worker = threading.Thread(target=analysis)
    worker.start()
    worker.join()
    assert job.rerun_due() and not job.rerun_due()  # one rerun per part, not one every half second
    background.part_ready()  # outside a job's thread: nothing
    assert not job.rerun_due()
    job.done.set()
    assert job.rerun_due()


def test_a_slow_sweep_shows_a_bar_with_cancel_and_cancelling_says_so(studio_env, monkeypatch):
    started = threading.Event()
    monkeypatch.setattr(ablation, "sweep_heads", lambda *_, on_fraction, **__: _crawl(started, on_fraction))
    monkeypatch.setattr(background, "WAIT_S", 0.0)
    at = open_app("attention")
    at.button(key="attention_sweep_run").click().run()
    assert_no_exception(at)
    assert started.wait(10)
    bars = [p for p in at.get("progress")]
    assert bars and "Ablating" in str(bars[0].proto.text)
    cancel = at.button(key="attention_sweep_cancel")
    cancel.click().run()
    said = texts(at.info)
    if not any("Sweep cancelled" in t for t in said):  # the worker had not seen the click yet: the next run says it
        time.sleep(0.5)
        at.run()
        said = texts(at.info)
    assert_no_exception(at)
    assert any("Sweep cancelled" in t for t in said), said
    assert at.button(key="attention_sweep_run")  # and the sweep can be asked for again


def test_a_slow_agreement_shows_a_bar_cancel_stops_it_and_a_faster_method_draws_it(studio_env, monkeypatch):
    import ui.views.features.attribution as attribution
    real = attribution.attribute_in_chunks
    started = threading.Event()
    monkeypatch.setattr(attribution, "attribute_in_chunks", lambda *_, progress, **__: _crawl(started, progress))
    monkeypatch.setattr(background, "WAIT_S", 0.0)
    at = open_app("attention")
    at.toggle(key="attention_agreement_on").set_value(True).run()
    assert_no_exception(at)
    assert started.wait(10)
    bars = [p for p in at.get("progress")]
    assert bars and "Attributing" in str(bars[0].proto.text) and "Integrated Gradients" in str(bars[0].proto.text)
    at.button(key="attention_agreement_cancel").click().run()
    _rerun_until(at, lambda: any("Attribution cancelled" in t for t in texts(at.info)))  # the worker may lag
    assert_no_exception(at)
    assert any("Attribution cancelled" in t for t in texts(at.info))
    assert not list(at.get("progress")), "a cancelled attribution must not start again by itself"
    monkeypatch.setattr(attribution, "attribute_in_chunks", real)
    at.radio(key="attention_agreement_method").set_value("gradient_x_input").run()
    _rerun_until(at, lambda: any("Gradient × input" in t for t in texts(at.caption)))
    assert_no_exception(at)
    assert any("Attribution: Gradient × input" in t for t in texts(at.caption))
    assert any("Best agreement" in t for t in texts(at.caption))


def _flow_script() -> None:
    """A page with one background analysis drawn by the kit's flow: its button, its result, or what stopped it."""
    import streamlit as st

    from transformer.decode import InputError
    from ui.views.kit import analysis_result, can_start, start_button

    calls = st.session_state.setdefault("calls", [])
    refused = st.session_state.get("refused", False)

    def run(progress) -> str:
        calls.append(refused)  # off the script thread: no Streamlit here
        progress(1.0)
        if refused:
            raise InputError("this input is too long")
        return "the answer"

    identity = ("probe", refused)
    result = analysis_result(identity, "Probing", run, key="probe")
    if result is None and can_start(identity):
        start_button("Probe", identity, key="probe", icon=":material/science:")
    elif result is not None:
        st.markdown(f"Result: {result}")


def test_the_flow_keeps_a_result_and_says_when_the_input_is_refused(studio_env):
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_function(_flow_script, default_timeout=30).run()
    assert [b.key for b in at.button] == ["probe_run"] and not texts(at.markdown)
    at.button(key="probe_run").click().run()  # a quick analysis ends within WAIT_S: drawn at once, no bar
    assert_no_exception(at)
    assert "Result: the answer" in texts(at.markdown) and not list(at.button)
    at.run()
    assert "Result: the answer" in texts(at.markdown) and at.session_state["calls"] == [False]  # kept, not rerun
    at.session_state["refused"] = True
    at.run()
    at.button(key="probe_run").click().run()
    assert_no_exception(at)
    assert any("this input is too long" in t for t in texts(at.warning))
    assert [b.key for b in at.button] == ["probe_run"]  # asked for again at once
