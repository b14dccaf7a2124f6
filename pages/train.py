"""Train: pick a task and sizes, train live off the script thread, watch curves and attention form, save."""
import streamlit as st

from ui.models import train_page_note
from ui.server import LIMITS, refuse
from ui.shell import ensure_frame
from ui.train import (
    CORPUS_SOURCES,
    FIELDS,
    PLAYING_KEY,
    STAGE_KEY,
    TASKS,
    apply_defaults,
    evaluation_panel,
    field_widget,
    init_state,
    layers_problem,
    length_note,
    live_panel,
    live_run,
    preset_names,
    rope_problem,
    server_runs_panel,
    stage_available,
    stage_caption,
    stage_help,
    stage_on,
    timeline_panel,
    tokenizer_widgets,
)
from ui.train import controls as tc

ensure_frame()
st.title("Train", anchor=False)
st.caption("Train a transformer while you watch. Training runs in the background and keeps going while you look at "
           "the other pages, which use the newest weights.")
init_state()
tc.warm_up_training()
run = live_run()
active = run is not None and run.active
tc.show_message()
audience = refuse("train")  # a session from another machine watches runs; the controls below are off for it
train_page_note()
server_runs_panel()

c_task, c_preset, c_stage, c_train = st.columns([3, 3, 2, 2], vertical_alignment="bottom")
c_task.selectbox("Task", list(TASKS), format_func=TASKS.__getitem__, key="train_task", on_change=apply_defaults,
                 disabled=active)
stage = stage_on()
c_preset.selectbox("Size preset", preset_names(), key="train_preset", on_change=apply_defaults,
                   disabled=active or stage,
                   help="The stage demo has sizes of its own." if stage else
                   "Fills in the settings under Every hyperparameter; each can still be changed.")
c_stage.toggle("Stage demo", key=STAGE_KEY, on_change=apply_defaults,
               disabled=active or not stage_available(st.session_state["train_task"]),
               help=stage_help(st.session_state["train_task"]))
c_train.button("Train", key="train_start", type="primary", icon=":material/play_arrow:", on_click=tc.start,
               disabled=active or audience, width="stretch")
stage_caption()
if st.session_state["train_task"] == "corpus":
    source = st.radio("Sentence pairs", list(CORPUS_SOURCES), format_func=CORPUS_SOURCES.__getitem__,
                      key="train_corpus_source", horizontal=True)
    if source == "text":
        st.text_area("One pair per line: source -> target (or TAB, |||, =>)", key="train_corpus_text", height=160,
                     max_chars=LIMITS.max_typed_corpus_chars)
    elif source == "tsv":
        st.file_uploader("TSV file: source<TAB>target per line", type=["tsv", "txt", "gz"], key="train_corpus_tsv",
                         disabled=audience)
    else:
        c_src, c_tgt = st.columns(2)
        c_src.file_uploader("Source sentences, one per line", type=["txt", "gz"], key="train_corpus_src",
                            disabled=audience)
        c_tgt.file_uploader("Target sentences, same order", type=["txt", "gz"], key="train_corpus_tgt",
                            disabled=audience)
    tokenizer_widgets(disabled=active)

with st.expander("Every hyperparameter", icon=":material/tune:", key="train_settings_open"):
    # one group a row, four fields across: three groups side by side cut the pickers' values at 1280 px
    for group, title in (("model", "Model"), ("train", "Optimisation"), ("run", "Budget, data and probe")):
        with st.container():
            st.markdown(f"**{title}**")
            fields = [f for f in FIELDS if f.group == group]
            inner = st.columns(4)
            for i, f in enumerate(fields):
                with inner[i % 4]:
                    field_widget(f)
            note = length_note() if group == "model" else None
            if note is not None:
                (st.error if note[0] == "error" else st.caption)(note[1])
            if group == "model":
                for problem in (rope_problem(st.session_state), layers_problem(st.session_state)):
                    if problem:
                        st.error(problem)  # the model config's own words
            if group == "run":
                st.text_input("Probe sentence (its attention is recorded while training)", key="train_probe")
                keep = st.toggle("Keep weight snapshots", key="train_snapshots",
                                 help="Keep the weights every N steps and at the end (in the run's snapshots/ folder, "
                                      "saved with it): `heads RUN --corpus FILE --snapshots` gives each head's "
                                      "statistics over training (docs/corpus-statistics.md).")
                if keep:
                    st.session_state.setdefault("train_snapshot_every", 100)
                    st.number_input("Snapshot every (steps)", min_value=1, max_value=LIMITS.max_steps, step=50,
                                    key="train_snapshot_every")

tc.run_controls()
if run is not None:
    st.subheader("Progress", anchor=False)
    st.fragment(run_every=1.0 if active else None)(live_panel)()
    st.fragment(run_every=5.0 if active else None)(evaluation_panel)()
    st.subheader("Attention timeline of the probe", anchor=False)
    st.caption("How the probe sentence's cross-attention formed during training (recorded about 20 times per "
               f"budget, and at least every {run.probe_every} steps). Drag the slider or press Play.")
    tc.probe_editor()
    playing = st.session_state.get(PLAYING_KEY, False)
    st.fragment(run_every=0.6 if playing else 3.0 if active else None)(timeline_panel)()
