"""Compare's second mode: one model on an input A and an edited input B. Both outputs aligned by edit distance with
the first divergence marked, each aligned step's change in probability and KL divergence, the attention difference
B − A on aligned rows and columns, and the heads ranked by how far their attention moved."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer.analysis import EditComparison, check_edit, compare_edit
from transformer.charts import EDIT_WINDOW, aligned_difference_heatmap, edit_window, head_movement_heatmap
from transformer.decode import ALL_TITLES, DecodeResult, InputError
from ui.models import ActiveModel
from ui.server import shared

from ..features import show_circuits, show_patching
from ..kit import (
    LINK_PARAMS,
    Column,
    Selection,
    bind_text,
    chart_heading,
    greedy_pair,
    head_label,
    head_picker,
    kind_picker,
    layer_picker,
    md_token,
    model_caption,
    model_text_input,
    share_text,
    show_chart,
    show_chips,
    show_small_table,
)

KEYS = LINK_PARAMS["compare"]  # link parameter -> widget key
MODE_KEY, EDIT_KEY = KEYS["cmode"], KEYS["edit"]
MODELS, EDIT = "models", "edit"
MODES = {MODELS: "Two models, one input", EDIT: "One model, an edited input"}
EDIT_STEP_COLUMNS = {
    "step_a": Column("A step", "%d"), "token_a": Column("A token"),
    "prob_a": Column("A prob", "%.3f", "A's probability of its own token at this step."),
    "step_b": Column("B step", "%d"), "token_b": Column("B token"),
    "prob_b": Column("B prob", "%.3f", "B's probability of its own token at this step."),
    "delta_prob": Column("Δ prob of A's token", "%+.3f", "p_B(A's token) − p_A(A's token): how the edit moved "
                         "the probability of what A chose here."),
    "kl": Column("KL(A‖B)", "%.3f", "KL divergence between A's and B's next-token distributions at these steps "
                 "(nats)."),
    "status": Column("tokens")}
RANK_COLUMNS = {"head": Column("head"), "mean_abs": Column("mean |B − A|", "%.4f", "Mean absolute change of the "
                                                             "head's weights over the aligned cells."),
                "max_abs": Column("largest |B − A|", "%.3f")}


def compare_mode() -> str:
    """The mode picker: two models on one input, or one model on an input and its edit."""
    st.session_state.setdefault(MODE_KEY, MODELS)
    return st.radio("Compare", list(MODES), format_func=MODES.get, key=MODE_KEY, horizontal=True,
                    label_visibility="collapsed")


def edited_text(text_a: str) -> str:
    """The edited input B, prefilled from A the first time (a one-word swap is the common edit)."""
    if not st.session_state.get(EDIT_KEY):
        st.session_state[EDIT_KEY] = text_a
    return model_text_input(st, "Edited input (B)", key=EDIT_KEY,
                            help="Change a word (or insert or delete some): both inputs are decoded by the model "
                                 "picked in the sidebar and everything is compared.")


# shared, not cache_data: cache_data pickled both decodes' traces and the aligned maps into the cache (and unpickled
# them on every rerun), 2-3 copies of maps that are 0.6 GB a side at GPT-2's heads and 1,023 tokens. The comparison
# is read-only (its maps are not writeable), so one object is shared, its bytes counted in the shared bound.
@shared
def _compare(model_key: str, _active: ActiveModel, text_a: str, text_b: str,
             _decoded: tuple[DecodeResult, DecodeResult]) -> EditComparison:
    return compare_edit(_active.adapter, text_a, text_b, decoded=_decoded)


def edit_comparison(active: ActiveModel, text_a: str, text_b: str) -> EditComparison | None:
    """Both decodes and every difference (cached per weights), or None after saying why not."""
    if not active.family.decodes:
        st.info(f"{active.option.name} writes no output token by token: edit and compare needs a decoder.",
                icon=":material/info:")
        return None
    try:
        check_edit(text_a, text_b)  # an empty or identical edit: said before any decode
        decoded = greedy_pair(active, text_a, text_b)  # the pages' cached decodes, both in one batch
        with st.spinner(f"Comparing both decodes of {active.option.name}…", show_time=True):
            return _compare(active.cache_key, active, text_a, text_b, decoded)
    except InputError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        return None


def _divergence(c: EditComparison) -> int | None:
    """Say where the outputs first part; returns A's 0-based step there (None if they agree)."""
    if c.first_divergence is None:
        st.success(f"No divergence: both inputs give the same {len(c.a.steps)} output tokens.",
                   icon=":material/check:")
        return None
    row = c.steps.loc[c.first_divergence]
    a = md_token(row["token_a"]) if row["token_a"] else "(nothing)"
    b = md_token(row["token_b"]) if row["token_b"] else "(nothing)"
    st.warning(f"First divergence at aligned step {c.first_divergence + 1}: A ‹{a}› vs B ‹{b}› ({row['status']}).",
               icon=":material/call_split:")
    return None if pd.isna(row["step_a"]) else int(row["step_a"]) - 1


def show_edit_outputs(active: ActiveModel, c: EditComparison) -> None:
    """Which model and weights, both outputs with the first divergence outlined, and the aligned step table."""
    st.markdown(model_caption("A and B", active))
    split = _divergence(c)
    b_split = None
    if c.first_divergence is not None and not pd.isna(c.steps.loc[c.first_divergence, "step_b"]):
        b_split = int(c.steps.loc[c.first_divergence, "step_b"]) - 1
    for column, tag, result, mark in zip(st.columns(2, gap="large"), "AB", (c.a, c.b), (split, b_split), strict=True):
        with column:
            show_chips(result.output_tokens, highlight=mark, caption=f"{tag}'s output (first divergence outlined)")
    with st.expander("Aligned steps: Δ probability and KL", icon=":material/table_rows:"):
        steps = c.steps.astype(object).where(c.steps.notna(), None)
        show_small_table(steps, EDIT_STEP_COLUMNS, key="compare_edit_steps")


def _window(axis: str, status: tuple[str, ...], kind: str) -> tuple[int, int]:
    """The positions of one axis the map draws: all of a short axis; of a long one a window of EDIT_WINDOW, around
    the edit at first, moved by a slider."""
    n = len(status)
    if n <= EDIT_WINDOW:
        return 0, n
    start, _ = edit_window(status)
    first = st.slider(f"{axis.capitalize()} from", 1, n - EDIT_WINDOW + 1, start + 1,
                      key=f"compare_edit_{axis}_{kind}_{n}",
                      help=f"This axis has {n} positions; the map draws {EDIT_WINDOW} of them (at first around the "
                           "edit).")
    st.caption(f"{axis.capitalize()} {first}–{first + EDIT_WINDOW - 1} of {n}.")
    return edit_window(status, first - 1)


def show_edit_difference(sel: Selection, c: EditComparison) -> None:
    """B − A of the selected kind, layer and head on the aligned axes, and the heads that moved most."""
    kind, layer, head = sel.kind, sel.layer, sel.head
    diff = c.differences[kind]
    view = f"B − A · {ALL_TITLES[kind]} · layer {layer + 1} · {head_label(head, spelled=True).lower()}"
    chart_heading(f"{view} · {sel.model.option.name}")
    st.caption("Rows and columns are aligned by edit distance: ‹+x› a token inserted in B (B's weights alone), "
               "‹−x› one deleted from A (A's alone), ‹a→b› a swapped token. Blue: B attends more; red: A attends more.")
    rows, cols = _window("rows", diff.query_status, kind), _window("keys", diff.key_status, kind)
    show_chart(aligned_difference_heatmap(diff, layer, head, title="", rows=rows, cols=cols),
               key="compare_edit_difference", width="content")
    st.subheader("Which heads moved", anchor=False)
    ranked = c.ranking.head(10).assign(head=lambda f: [
        f"{ALL_TITLES[k]} · L{lay + 1} H{h + 1}" for k, lay, h in zip(f["kind"], f["layer"], f["head"], strict=True)])
    show_small_table(ranked, RANK_COLUMNS, key="compare_edit_ranking")
    chart_heading(f"Mean |B − A| per head · {ALL_TITLES[kind]}")
    show_chart(head_movement_heatmap(c.ranking, kind), key="compare_edit_movement", width="content")


def show_edit_mode(active: ActiveModel) -> None:
    """The whole edit mode under Compare's mode picker: both inputs, both outputs, the aligned maps, the heads."""
    st.caption(f"One model ({active.option.name}, picked in the sidebar) on an input A and an edited input B. The "
               "outputs are aligned token by token by edit distance; every attention map's difference B − A is drawn "
               "on aligned rows and columns, so an inserted word does not shift everything after it.")
    bind_text(KEYS["text"], active)
    col_a, col_b = st.columns(2)
    with col_a:
        text_a = model_text_input(st, "Input (A)", key=KEYS["text"], on_change=share_text, args=(KEYS["text"],))
    with col_b:
        text_b = edited_text(text_a)
    comparison = edit_comparison(active, text_a, text_b)
    if comparison is None:
        return
    show_edit_outputs(active, comparison)
    trace = comparison.a.trace
    c_kind, c_layer, c_head = st.columns([4, 2, 2], vertical_alignment="bottom")
    with c_kind:
        kind = kind_picker("Attention", KEYS["kind"], trace)
    with c_layer:
        layer = layer_picker("Layer", trace.n_layers(kind), KEYS["layer"])
    with c_head:
        head = head_picker("Head", trace.n_heads, KEYS["head"], trace=trace, kind=kind)
    # one model on A and on B (the other side), one picker row
    sel = Selection("compare", active, text_a, comparison.a, kind=kind, layer=layer, head=head,
                    against=Selection("compare", active, text_b, comparison.b, kind=kind, layer=layer, head=head))
    show_edit_difference(sel, comparison)
    show_patching(active, comparison)
    show_circuits(active, comparison.a.source_text, comparison.b.source_text)
