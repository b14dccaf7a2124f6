"""Head ablation on the Decode and Attention pages: pick heads to switch off, the ablated run beside the intact one,
and the "ablate each head in turn" sweep (progress bar, time cap, cached per model and input in the session)."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import streamlit as st

from transformer.analysis import (
    Head,
    HeadError,
    all_heads,
    comparison_frame,
    first_divergence,
    head_mask,
    parse_head,
    sweep_heads,
)
from transformer.charts import (
    attention_heatmap,
    importance_chart,
    selected_panel,
    source_strip,
    step_probability_chart,
)
from transformer.decode import ALL_TITLES, DecodeResult, InputError, greedy_decode, masked_decode, teacher_forced
from ui.models import ActiveModel
from ui.server import shared

from ..kit import (
    PAGE_PX,
    JobTexts,
    Selection,
    SlideTitle,
    analysis_result,
    can_start,
    chart_heading,
    head_label,
    map_kind,
    md,
    md_token,
    show_chart,
    show_chips,
    slide_downloads,
    slide_title,
    start_button,
)
from ..kit import decode_state as ds

SWEEP_TIME_CAP = 300.0  # seconds; a sweep that runs out shows the heads it reached and says so (Cancel stops it)


# the head codes of every family (a decoder-only model has "self")
HEAD_KIND_NAMES = {"enc": "Enc. self", "dec": "Dec. self", "cross": "Cross", "self": "Self"}


def head_title(label: str) -> str:
    """'cross:L1H2' -> 'Cross L1 H2' for pickers and tables."""
    kind, rest = label.split(":")
    return f"{HEAD_KIND_NAMES.get(kind, kind)} {rest.replace('H', ' H')}"


@shared(spinner="Decoding with the heads switched off…")
def _ablated(model_key: str, _active: ActiveModel, text: str, reference: str | None, labels: tuple[str, ...],
             top_k: int) -> DecodeResult:
    adapter = _active.adapter
    mask = head_mask(adapter, [parse_head(label, adapter) for label in labels])
    if not adapter.family.decodes:  # an encoder-only model: its predictions at the masks with the heads off
        return masked_decode(adapter, text, top_k=top_k, head_mask=mask)
    if reference is None:
        return greedy_decode(adapter, text, top_k=top_k, head_mask=mask)
    return teacher_forced(adapter, text, reference, top_k=top_k, head_mask=mask)


def chosen_heads(active: ActiveModel, key: str) -> tuple[Head, ...]:
    """The heads a page's "Switch heads off" picker holds (what it returns when drawn this run); selections the
    current model lacks are dropped from it."""
    adapter = active.adapter
    options = {h.label for h in all_heads(adapter)}
    chosen = st.session_state.get(key)
    if isinstance(chosen, list) and any(label not in options for label in chosen):
        st.session_state[key] = [label for label in chosen if label in options]
    return tuple(parse_head(label, adapter) for label in st.session_state.get(key) or ())


def head_selection(active: ActiveModel, key: str, *, help_text: str = "") -> list[Head]:
    """Multiselect of heads to switch off (kind, layer, head); selections the current model lacks are dropped. A link's
    `ablate=` fills it (ui.url_state, which notes heads the model lacks), and a change goes into the link."""
    adapter = active.adapter
    options = [h.label for h in all_heads(adapter)]
    chosen_heads(active, key)
    labels = st.multiselect("Switch heads off", options, key=key, format_func=head_title,
                            placeholder="Choose heads to ablate", help=help_text or
                            "An ablated head contributes nothing to its attention output: its slice of the "
                            "concatenated heads is zeroed before the output projection.")
    return [parse_head(label, adapter) for label in labels]


def add_head(key: str, label: str) -> None:
    """on_click: add one head (a 'cross:L1H2' label) to a page's selection."""
    chosen = list(st.session_state.get(key) or [])
    if label not in chosen:
        st.session_state[key] = [*chosen, label]


def toggle_head(key: str, label: str) -> None:
    """Switch one head (a 'cross:L1H2' label) off if it is on in a page's selection, else back on."""
    chosen = list(st.session_state.get(key) or [])
    st.session_state[key] = [x for x in chosen if x != label] if label in chosen else [*chosen, label]


def grid_key(base: str) -> str:
    """The widget key of an all-heads grid whose clicks switch heads. It changes after every handled click: Vega keeps
    the clicked panel selected and Streamlit reports only changes, so a second click on the same panel (to switch the
    head back on) needs a fresh chart."""
    return f"{base}_{st.session_state.get(f'{base}_clicks', 0)}"


def toggle_clicked_head(base: str, kind: str, target: str, *, rerun_app: bool = False) -> None:
    """on_select of an all-heads grid: the clicked head goes into the selection `target` (or out, if it was in).
    The mean panel is no single head: it switches nothing off, and `clicked_note` says so once."""
    panel = selected_panel(st.session_state.get(grid_key(base)))
    if panel is None:  # a double-click cleared the selection
        return
    st.session_state[f"{base}_clicks"] = st.session_state.get(f"{base}_clicks", 0) + 1
    layer, head = panel
    if head is None:
        st.session_state[f"{base}_note"] = ("The mean panel is the average of the heads, not one head: click a "
                                            "head's panel to switch that head off.")
    else:
        toggle_head(target, Head(kind, layer, head).label)
    if rerun_app:  # a grid inside a fragment: the ablated run is computed by the page around it
        ds.rerun_whole_page()


def clicked_note(base: str) -> None:
    """The note left by a click on the mean panel, shown once."""
    note = st.session_state.pop(f"{base}_note", None)
    if note:
        st.info(note, icon=":material/info:")


def off_panels(heads: Sequence[Head], kind: str) -> list[tuple[int, int]]:
    """(layer, head) of the heads of `kind` switched off, to mark them in an all-heads grid."""
    return [(h.layer, h.head) for h in heads if h.kind == kind]


def ablated_run(active: ActiveModel, text: str, heads: Sequence[Head], *, reference: str | None = None,
                top_k: int = 5) -> DecodeResult | None:
    """The run with `heads` switched off, or None (with a message) when nothing is selected or it cannot run."""
    if not heads:
        return None
    try:
        return _ablated(active.cache_key, active, text, reference, tuple(sorted(h.label for h in heads)), int(top_k))
    except (HeadError, InputError) as exc:
        st.warning(str(exc), icon=":material/block:")
        return None


def show_comparison(intact: DecodeResult, ablated: DecodeResult, heads: Sequence[Head], *, key: str) -> None:
    """Output of both runs, where they first diverge, and per step the chosen token and its probability."""
    names = ", ".join(head_title(h.label) for h in heads)
    diverge = first_divergence([str(s.token_id) for s in intact.steps], [str(s.token_id) for s in ablated.steps])
    left, right = st.columns(2)
    with left.container(border=True):
        st.markdown("**Intact model**")
        show_chips(intact.output_tokens, highlight=diverge, caption="output")
    with right.container(border=True):
        st.markdown(f"**Without {md(names)}**")
        show_chips(ablated.output_tokens, highlight=diverge, caption="output")
    if diverge is None:
        st.success("Same output with these heads switched off.", icon=":material/check:")
    else:
        a = intact.steps[diverge].token if diverge < len(intact.steps) else "(ended)"
        b = ablated.steps[diverge].token if diverge < len(ablated.steps) else "(ended)"
        st.info(f"The outputs first differ at step {diverge + 1}: ‹{md_token(a)}› intact, ‹{md_token(b)}› ablated.",
                icon=":material/call_split:")
    frame = comparison_frame(intact, ablated)
    show_chart(step_probability_chart(frame), key=f"{key}_probs", width="content")
    st.dataframe(frame, hide_index=True, key=f"{key}_table", column_config={
        "intact_prob": st.column_config.NumberColumn("intact p", format="%.3f"),
        "ablated_prob": st.column_config.NumberColumn("ablated p", format="%.3f")})


def sweep_output(result: DecodeResult) -> list[int]:
    """The ids a sweep scores: the steps' tokens (a teacher-forced result's steps are the reference and the end)."""
    return [s.token_id for s in result.steps]


SWEEP_TEXTS = JobTexts(cancelled="Sweep cancelled: nothing was kept.", cancelled_icon=":material/stop_circle:",
                       refused="Cannot sweep this input: {error}", refused_icon=":material/block:")


def show_sweep(active: ActiveModel, text: str, output: Sequence[int], output_text: str, *, key: str) -> None:
    """'Ablate each head in turn': drop in log p(output) per head, as heatmaps per kind and a ranked table."""
    identity = ("sweep", active.cache_key, text, tuple(output))
    adapter = active.adapter
    n_heads = len(all_heads(adapter))
    st.caption(f"Teacher-forced on the current output ‹{md(output_text) or '(empty)'}›: how much less likely the "
               f"model finds it with each of its {n_heads} head{'s' * (n_heads != 1)} switched off on its own "
               f"(natural log; larger = the head matters more). Stops after {SWEEP_TIME_CAP:.0f} s.")
    sweep = analysis_result(identity, f"Ablating {n_heads} head{'s' * (n_heads != 1)}",
                            lambda progress: sweep_heads(adapter, text, output, time_cap=SWEEP_TIME_CAP,
                                                         on_fraction=progress), key=key, texts=SWEEP_TEXTS)
    if sweep is None:
        if can_start(identity):
            start_button("Ablate each head in turn", identity, key=key, icon=":material/science:")
        return
    if not sweep.complete:
        st.warning(f"The sweep stopped at the {SWEEP_TIME_CAP:.0f} s cap after {len(sweep.frame)} of {n_heads} "
                   "heads; the others are not shown.", icon=":material/timer:")
    st.caption(f"log p(output) intact: {sweep.base_log_prob:.3f} · swept in {sweep.seconds:.2f} s")
    if sweep.frame.empty:
        return
    importance = importance_chart(sweep.frame, max_width=PAGE_PX)  # the kinds wrapped to the column, legends in it
    show_chart(importance, key=f"{key}_heatmap", width="content")
    slide_downloads(importance, slide_title(active, text).lines(f"Drop in log p(output) with each head switched off · "
                                                                f"output: {output_text}"),
                    "ablation_sweep", f"{key}_heatmap")
    table = pd.DataFrame({"head": [head_title(label) for label in sweep.frame["label"]],
                          "kind": [ALL_TITLES[k] for k in sweep.frame["kind"]],
                          "drop": sweep.frame["drop"], "log p ablated": sweep.frame["log_prob"]})
    st.dataframe(table, hide_index=True, key=f"{key}_table", height=240, column_config={
        "drop": st.column_config.NumberColumn("drop in log p", format="%.4f"),
        "log p ablated": st.column_config.NumberColumn(format="%.3f")})


def show_ablated_step(ablated: DecodeResult, t: int, layer: int, head: int | None, title: SlideTitle, *,
                      key: str) -> None:
    """The ablated run's attention at step t (cross-attention where the model has it, else its causal
    self-attention over the prefix; same layer and head as the intact strip above it)."""
    if t >= len(ablated.steps):
        st.caption(f"The ablated run ended before step {t + 1}.")
        return
    step, trace = ablated.steps[t], ablated.trace
    kind, row = map_kind(trace), trace.step_offset + t
    keys = trace.labels(kind)[1]
    if trace.family.causal(kind):
        keys = keys[: row + 1]
    chart_heading(f"With the heads switched off: step {t + 1} chooses ‹{step.token}› ({step.prob:.1%}); its "
                  f"attention · layer {layer + 1} · {head_label(head, spelled=True).lower()}")
    strip = source_strip(keys, trace.matrix(kind, layer, head)[row, : len(keys)].tolist(), max_width=PAGE_PX)
    show_chart(strip, width="content", key=key)
    slide_downloads(strip, title.lines(f"{ALL_TITLES[kind]} with heads switched off · layer {layer + 1} · "
                                       f"{head_label(head, spelled=True).lower()} · step {t + 1}"),
                    f"ablated_source_step{t + 1}", key)


def current_output(active: ActiveModel, result: DecodeResult, reference: str | None) -> list[int]:
    """The output the page shows, as ids: the reference and </s> when teacher-forced, else the decode's own."""
    if reference:
        adapter = active.adapter
        return [*adapter.target_ids(reference), min(adapter.end_ids)]
    return sweep_output(result)


def attention_ablation(sel: Selection) -> None:
    """The Attention page's ablation: pick heads (or add the open one), compare runs, the map with them off."""
    kind, layer, head = sel.kind, sel.layer, sel.head
    if head is not None:
        label = Head(kind, layer, head).label
        st.button(f"Switch {head_title(label)} off", key="attention_ablate_open", icon=":material/block:",
                  on_click=add_head, args=(sel.param_key("ablate"), label),
                  help="Add the head shown large above (or clicked in the model view) to the heads switched off.")
    heads = head_selection(sel.model, sel.param_key("ablate"))
    ablated = ablated_run(sel.model, sel.text, heads, reference=sel.reference)
    if ablated is None:
        return
    show_comparison(sel.result, ablated, heads, key="attention_ablation")
    chart_heading(f"{ALL_TITLES[kind]} · layer {layer + 1} · {head_label(head, spelled=True).lower()} "
                  "with the heads switched off")
    heatmap = attention_heatmap(ablated.trace, kind, layer, head, fixed_scale=sel.fixed_scale, size=460, title="")
    names = ", ".join(head_title(h.label) for h in heads)
    show_chart(heatmap, key="attention_ablated_heatmap", width="content")
    slide_downloads(heatmap, sel.title.lines(
        f"{ALL_TITLES[kind]} · layer {layer + 1} · {head_label(head, spelled=True).lower()} · without {names}"),
        f"{kind}_layer{layer + 1}_ablated", "attention_ablated_heatmap")
