"""The live part of the Train page: progress, curves, metrics and the probe's attention timeline (fragments)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer.charts import attention_heatmap, training_curves, training_slides
from transformer.store import thin_frames
from transformer.train import JobSnapshot, LiveRun
from ui.views import (
    animation_downloads,
    chart_spec,
    file_stem,
    head_label,
    head_picker,
    kind_title,
    layer_picker,
    map_kind,
)

from .job_layout import job_layout, waiting_reason
from .live_run import live_run, run_just_ended

TIMELINE_STEP_KEY = "train_timeline_step"
PLAYING_KEY = "train_timeline_playing"
FOLLOW_KEY = "train_timeline_follow"
RESTART_KEY = "train_timeline_restart"
TIMELINE_CHART_KEY = "train_timeline_chart"
_STATUS = {"waiting": "Waiting for a training slot", "running": "Training", "finished": "Finished",
           "stopped": "Stopped", "failed": "Failed"}


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}:{secs:02d}" if minutes else f"{secs} s"


TIME_CAP_SLACK = 0.97  # a run that ran this share of its time budget or more was ended by it (the last step's overrun)


def status_bar(name: str, snap: JobSnapshot) -> tuple[float, str]:
    """The progress bar's fill and text: a finished run is a full bar that says where it ended and which cap ended it
    (a stage run ends when its picture is clean, long before the step cap: "step 450 of 5,000" read as a run that died
    at 9 %; a run its time budget ended says so, not "before the cap of … 15 s" after 16 s). A run at step 0 is
    preparing (the model and the data are built before the first step: seconds with no other word)."""
    if snap.status == "finished":
        done = f"Finished · {name} · done at step {snap.step:,} in {_duration(snap.run_seconds)}"
        if snap.step >= snap.target_steps:
            return 1.0, f"{done} (its cap of {snap.target_steps:,} steps)"
        if snap.max_seconds and snap.run_seconds >= TIME_CAP_SLACK * snap.max_seconds:
            return 1.0, (f"{done}: its time cap of {_duration(snap.max_seconds)} ended it, before the "
                         f"{snap.target_steps:,} steps planned")
        caps = [f"{snap.target_steps:,} steps"] + ([_duration(snap.max_seconds)] if snap.max_seconds else [])
        return 1.0, f"{done} (before the cap of {' or '.join(caps)})"
    if snap.status == "running" and snap.step == 0:
        return 0.0, f"Preparing · {name} · building the model and its data before the first step"
    fraction = min(snap.step / max(snap.target_steps, 1), 1.0)
    if snap.max_seconds:
        fraction = max(fraction, min(snap.run_seconds / snap.max_seconds, 1.0)) if snap.active else fraction
    budget = f" · {_duration(snap.run_seconds)} of {_duration(snap.max_seconds)}" if snap.max_seconds else ""
    return fraction, f"{_STATUS[snap.status]} · {name} · step {snap.step:,} of {snap.target_steps:,}{budget}"


def _status_line(run: LiveRun, snap: JobSnapshot) -> None:
    fraction, text = status_bar(run.name, snap)
    st.progress(fraction, text=text)
    st.caption(job_layout(run.job))
    if snap.status == "waiting":
        st.warning(waiting_reason(run.job), icon=":material/hourglass_top:")
    elif snap.status == "failed":
        st.error(snap.message, icon=":material/error:")
    elif snap.status == "finished" and snap.message:
        st.info(f"Finished: {snap.message}. Resume trains on with a new time budget (the Seconds box).",
                icon=":material/flag:")
    elif snap.message:
        st.caption(snap.message)
    last = snap.history[-1] if snap.history else {}
    cols = st.columns(5)
    cols[0].metric("Step", f"{snap.step:,}")
    cols[1].metric("Steps / s", f"{snap.steps_per_s:,.1f}" if snap.active else "–")
    cols[2].metric("Tokens / s", f"{snap.tokens_per_s:,.0f}" if snap.active else "–")
    cols[3].metric("Time left", _duration(snap.seconds_left) if snap.active else "–")
    cols[4].metric("Loss", f"{last['loss']:.3f}" if "loss" in last else "–")


def validation_set_label(run: LiveRun, n: int) -> str:
    """Which examples a validation score is measured on: held out, or (too few pairs) the training pairs."""
    if run.plan.task.spec.get("valid_is_train"):
        return (f"measured on the {n} training pairs: too few pairs to hold any out, so this says how well it "
                "learned them, not how it does on new sentences; add more pairs to get a held-out score")
    return f"{n} held-out examples"


def _evaluation(run: LiveRun, snap: JobSnapshot) -> None:
    if not snap.evals:
        st.caption("Validation metrics appear after the first evaluation.")
        return
    last = snap.evals[-1]
    accuracy = "masked-token accuracy" if "masked_accuracy" in last else "token accuracy"  # an encoder-only run's
    shown = {"step": last.get("step"), "valid loss": last.get("loss"), accuracy: last.get("token_accuracy"),
             "exact match": last.get("exact_match")}
    for key in ("bleu", "chrf"):
        if key in last:
            shown[key.upper() if key == "bleu" else "chrF"] = last[key]
    label = validation_set_label(run, last.get("n", 0))
    st.markdown(f"**Validation** (step {last.get('step', 0):,}, {label}): " + " · ".join(
        f"{name} {value:.3f}" if isinstance(value, float) else f"{name} {value}"
        for name, value in shown.items() if name != "step" and value is not None))
    examples = last.get("examples") or []
    if examples:
        st.dataframe(pd.DataFrame(examples), hide_index=True, key="train_examples",
                     column_config={"source": "source", "reference": "reference", "output": "model output"})


def live_panel() -> None:
    """Progress, speed, curves and metrics of this session's run (a fragment polls it every second)."""
    run = live_run()
    if run is None:
        return
    snap = run.job.snapshot()
    if run_just_ended(snap.active):
        st.rerun(scope="app")  # the run ended: the form, the buttons and the sidebar change
    _status_line(run, snap)
    st.plotly_chart(training_curves(snap.history, snap.evals, uirevision=run.id), key="train_curves",
                    config={"displaylogo": False})


def evaluation_panel() -> None:
    """The newest validation metrics and example outputs (a slower fragment: they change every eval_every steps)."""
    run = live_run()
    if run is not None:
        _evaluation(run, run.job.snapshot(history_tail=1))


def _advance(steps: list[int]) -> None:
    """One animation frame: the next recorded step; stop at the last one."""
    current = st.session_state.get(TIMELINE_STEP_KEY)
    index = steps.index(current) + 1 if current in steps else 0
    if index >= len(steps) - 1:
        st.session_state[PLAYING_KEY] = False
        index = len(steps) - 1
    st.session_state[TIMELINE_STEP_KEY] = steps[index]


def _toggle_play(steps: list[int]) -> None:
    """Play / Pause callback; the page then reruns so the animation timer starts or stops."""
    state = st.session_state
    playing = not state.get(PLAYING_KEY, False)
    state[PLAYING_KEY], state[FOLLOW_KEY], state[RESTART_KEY] = playing, False, True
    if playing and state.get(TIMELINE_STEP_KEY) == steps[-1]:
        state[TIMELINE_STEP_KEY] = steps[0]


def _follow_latest(steps: list[int]) -> None:
    """Slider callback: keep following new snapshots only while the newest one is shown."""
    st.session_state[FOLLOW_KEY] = st.session_state[TIMELINE_STEP_KEY] == steps[-1]


def _animation(run: LiveRun, snapshots: list, layer: int, head: int | None) -> None:
    """"Download animation" of the timeline: the probe's map of this layer and head, a recording a second (at most
    the frames a saved run keeps, evenly spread)."""
    frames = thin_frames(snapshots)
    if not frames:
        return
    kind = map_kind(frames[-1][1])
    model = f"{run.name} · steps {frames[0][0]:,} to {frames[-1][0]:,}"
    what = (f"How the probe's {kind_title(kind).lower()} formed while training: layer {layer + 1}, "
            f"{head_label(head, spelled=True).lower()}")
    animation_downloads(lambda: training_slides(frames, model=model, layer=layer, head=head), len(frames),
                        file_stem(f"training_{run.name}", layer, head), "train_animation", what)


def timeline_panel() -> None:
    """A slider over training steps showing how the probe's cross-attention formed; Play animates it."""
    run = live_run()
    if st.session_state.pop(RESTART_KEY, False):
        st.rerun(scope="app")  # the animation timer is set when the whole page runs
    if run is None:
        return
    snapshots = run.timeline()
    if not snapshots:
        st.caption(f"The probe is decoded every {run.probe_every} steps; its attention appears here.")
        return
    steps = [step for step, _ in snapshots]
    state = st.session_state
    playing = state.get(PLAYING_KEY, False)
    if playing:
        _advance(steps)
    elif state.get(FOLLOW_KEY, True) or state.get(TIMELINE_STEP_KEY) not in steps:
        state[TIMELINE_STEP_KEY] = steps[-1]
    trace = dict(snapshots)[state[TIMELINE_STEP_KEY]]
    c_step, c_layer, c_head, c_play = st.columns([6, 2, 2, 1.4], vertical_alignment="bottom")
    if len(steps) > 1:
        c_step.select_slider("Training step", options=steps, key=TIMELINE_STEP_KEY, on_change=_follow_latest,
                             args=(steps,), format_func=lambda step: f"{step:,}")
    else:
        c_step.caption(f"Recorded at step {steps[0]:,}.")
    with c_layer:
        layer = layer_picker("Decoder layer", trace.n_layers(map_kind(trace)), "train_timeline_layer")
    with c_head:
        head = head_picker("Head", trace.n_heads, "train_timeline_head")
    c_play.button("Pause" if playing else "Play", key="train_timeline_play", width="stretch",
                  icon=":material/pause:" if playing else ":material/play_arrow:", disabled=len(steps) < 2,
                  on_click=_toggle_play, args=(steps,))
    shown = (run.id, state[TIMELINE_STEP_KEY], layer, head)
    cached = state.get(TIMELINE_CHART_KEY)
    if cached is None or cached[0] != shown:  # the fragment reruns every second; rebuild only what changed
        chart = attention_heatmap(trace, map_kind(trace), layer, head, size=380,
                                  title=f"Step {state[TIMELINE_STEP_KEY]:,} · layer {layer + 1} · "
                                        f"{'mean of heads' if head is None else f'head {head + 1}'}")
        cached = state[TIMELINE_CHART_KEY] = (shown, chart_spec(chart))
    st.vega_lite_chart(spec=cached[1], key="train_timeline_map", width="content")
    _animation(run, snapshots, layer, head)
    if playing and state.get(PLAYING_KEY) is False:
        st.rerun(scope="app")  # reached the end: stop the animation timer
