"""Compare's edit mode, part three: the circuit. Which heads and connections carry A's answer that its edit B lacks:
every edge (embeddings, heads, MLPs into a later head's query, key or value, an MLP or the logits) scored by EAP-IG or
EAP, and the circuits of the top n edges checked by real edge patching. A background job (progress, Cancel); a slider
over n beside the faithfulness curve (in the link); a node opens the head's page, an edge its composition score and
the QK table of its head at the strongest cell."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st
import torch

from transformer.adapters import ResidualPathError
from transformer.analysis import (
    CIRCUIT_IG_STEPS,
    EAP,
    EAP_IG,
    CircuitPair,
    CircuitResult,
    circuit_baseline,
    find_circuit,
    pair_composition,
    pair_from_text,
    patched_metric,
    qk_attribution,
    top_edges,
)
from transformer.charts import CIRCUIT_NODE, MAX_DRAWN, circuit_chart, faithfulness_chart
from transformer.decode import InputError
from transformer.model import Head, HeadError
from ui.models import ActiveModel

from ..kit import (
    LINK_PARAMS,
    JobTexts,
    analysis_result,
    can_start,
    head_page_link,
    md,
    show_chart,
    show_feature_cell,
    start_button,
)

KEY = "compare_circuits"
COMPARE_PAGE = "pages/compare.py"
N_KEY = LINK_PARAMS["compare"]["circ"]
METHOD_TITLES = {EAP_IG: "EAP-IG (integrated gradients)", EAP: "EAP (one backward)"}
CIRCUIT_TEXTS = JobTexts(cancelled="Circuit search cancelled: nothing was kept.",
                         cancelled_icon=":material/stop_circle:", refused="No circuit: {error}",
                         refused_icon=":material/block:", refusals=(InputError, ResidualPathError))


@dataclass(frozen=True)
class CircuitRun:
    """A finished search as the page keeps it: the result and the pair it ran on (its captures read the QK table)."""

    result: CircuitResult
    pair: CircuitPair


def _run(active: ActiveModel, text_a: str, text_b: str, method: str, steps: int, progress) -> CircuitRun:
    pair = pair_from_text(active.adapter, text_a, text_b)
    return CircuitRun(find_circuit([pair], method=method, ig_steps=steps, progress=progress), pair)


def show_circuits(active: ActiveModel, text_a: str, text_b: str) -> None:
    """The circuit section under Compare's comparison of one model on input A and its edit B (an encoder-only
    model's two inputs too)."""
    st.subheader("Which heads carry it? The circuit", anchor=False)
    st.caption("Every edge from the embeddings, a head or an MLP into a later head's query, key or value, an MLP or "
               "the logits is scored by edge attribution (EAP-IG: Hanna et al. 2024; EAP: Syed et al. 2023) at the "
               "first step where B's answer differs; the circuit of the top n edges is then run with every other "
               "edge taking B's value (real patching), and the curve says how much of A − B it keeps.")
    c_method, c_steps = st.columns([3, 1], vertical_alignment="bottom")
    method = c_method.selectbox("Attribution", list(METHOD_TITLES), key=f"{KEY}_method",
                                format_func=METHOD_TITLES.__getitem__)
    steps = int(c_steps.number_input("IG steps", 1, 50, CIRCUIT_IG_STEPS, key=f"{KEY}_ig_steps",
                                     disabled=method == EAP))
    identity = ("circuits", method, steps, active.cache_key, text_a, text_b)
    run = analysis_result(identity, "Finding the circuit",
                          lambda progress: _run(active, text_a, text_b, method, steps, progress), key=KEY,
                          texts=CIRCUIT_TEXTS)
    if run is None:
        if can_start(identity):
            start_button("Find the circuit", identity, key=KEY, icon=":material/account_tree:")
        return
    show_circuit(active, run)


def _n(result: CircuitResult) -> int:
    top = len(result.edges)
    if not isinstance(st.session_state.get(N_KEY), int) or not 1 <= st.session_state[N_KEY] <= top:
        st.session_state[N_KEY] = result.faithfulness.n
    return int(st.slider("Edges in the circuit (n)", 1, top, key=N_KEY,
                         help="The top n edges by |score|; every other edge takes B's value when the circuit runs."))


def _kept(run: CircuitRun, n: int) -> float:
    """The share of A − B the circuit of the top n edges keeps (one patched run, kept per n)."""
    cache = st.session_state.setdefault(f"{KEY}_kept", {})
    mark = (id(run), n)
    if mark not in cache:
        result = run.result
        base = cache.get((id(run), "base"))  # the corrupted run and both metrics, once per search
        if base is None:
            base = circuit_baseline([run.pair], result.metric)
        value = patched_metric([run.pair], base, top_edges(torch.tensor([e.score for e in result.edges]), n),
                               result.metric)
        cache.clear()
        cache[(id(run), "base")], cache[mark] = base, (value - base.corrupted_metric) / base.gap
    return float(cache[mark])


def circuit_link(active: ActiveModel, text: str) -> None:
    """From the Attention page: the circuit view is under Compare, on this input as A and an edit of it as B."""
    st.subheader("Which heads carry it? The circuit", anchor=False)
    st.caption("Which heads and connections carry this output: type an edit of the input on Compare (one model, A and "
               "its edit B) and find the circuit there, every edge scored by EAP-IG and the top ones checked by real "
               "patching.")
    params = {"cmode": "edit", "text": text} if active.family.decodes else {"way": "inputs", "text": text}
    st.page_link(COMPARE_PAGE, label="Find the circuit on Compare", icon=":material/account_tree:",
                 query_params={"model": active.option.id, **params})


def show_circuit(active: ActiveModel, run: CircuitRun) -> None:
    """A finished search: its figures, the graph beside the curve, the slider over n, a node's and an edge's views."""
    result, f = run.result, run.result.faithfulness
    where = f"output token {result.step + 1}" if result.step is not None else "the mask"
    state = "reaches" if f.reached else "does not reach; the best found"
    st.caption(f"{METHOD_TITLES[result.method]} at {where}: logit ‹{md(result.answer)}› − logit "
               f"‹{md(result.contrast)}›, A {result.clean_metric:.3f}, B {result.corrupted_metric:.3f} · "
               f"{len(result.edges):,} edges in {result.seconds:.1f} s · the smallest circuit that {state} 0.8: "
               f"**{f.n}** edges · area {f.area:.3f}")
    n = _n(result)
    event = show_chart(circuit_chart(result, n), key=f"{KEY}_graph", on_select="rerun",
                       selection_mode=[CIRCUIT_NODE], width="content")  # a row of its own: a 1280-px page holds it
    left, right = st.columns([3, 2])
    with left:
        show_chart(faithfulness_chart(result, n), key=f"{KEY}_curve", width="content")
    with right:
        st.metric("Share of A − B this circuit keeps", f"{_kept(run, n):.3f}")
    _node(event)
    _edge(active, run, n)


def _node(event) -> None:
    picked = ((getattr(event, "selection", None) or {}).get(CIRCUIT_NODE) or [{}])[0].get("node")
    if not picked:
        st.caption("Click a node to open its head's page.")
        return
    try:
        head_page_link(Head.parse(str(picked)), f"Open {picked}'s page")
    except HeadError:
        st.caption(f"{picked} is not a head: no head page.")


def _edge(active: ActiveModel, run: CircuitRun, n: int) -> None:
    edges = run.result.top(min(n, MAX_DRAWN))  # the edges the graph draws
    label = "An edge of the circuit" if n <= MAX_DRAWN else f"An edge of the circuit (its {MAX_DRAWN} strongest)"
    i = st.selectbox(label, range(len(edges)), key=f"{KEY}_edge",
                     format_func=lambda k: f"{edges[k].source} → {edges[k].target} ({edges[k].input}) "
                                           f"{edges[k].score:+.3f}")
    edge = edges[min(int(i or 0), len(edges) - 1)]
    try:
        writer, reader = Head.parse(edge.source), Head.parse(edge.target)
    except HeadError:
        st.caption("Composition and the QK table are for an edge between two heads.")
        return
    if edge.input in ("q", "k", "v"):
        try:
            score = _composition(active, writer, reader)[edge.input]
            st.caption(f"{edge.input.upper()}-composition of {edge.source} → {edge.target} (from the weights): "
                       f"{score:.3f}")
        except ResidualPathError as exc:
            st.caption(str(exc))
    _qk(active, run, writer, reader, edge.input)


def _composition(active: ActiveModel, writer: Head, reader: Head) -> dict[str, float]:
    """The pair's composition scores (the two layers' factors only, not the whole table), kept per weights and pair."""
    cache = st.session_state.setdefault(f"{KEY}_composition", {})
    mark = (active.cache_key, writer.label, reader.label)
    if mark not in cache:
        cache.clear()
        cache[mark] = pair_composition(active.adapter, writer, reader)
    return dict(cache[mark])


def _qk(active: ActiveModel, run: CircuitRun, writer: Head, reader: Head, side: str) -> None:
    """The reader's score at its strongest cell of A's run, taken apart: what the writer's part adds to it."""
    cap = run.pair.clean.cap
    pattern = cap.insides.inputs[reader.kind][reader.layer].pattern()[0, reader.head]  # (Tq, Tk)
    query = run.pair.position if pattern.shape[0] > run.pair.position and reader.kind != "encoder_self" else \
        int(pattern.max(-1).values.argmax())
    key = int(pattern[query].argmax())
    try:
        table = qk_attribution(cap, reader, query, key)
    except ResidualPathError as exc:
        st.caption(str(exc))
        return
    parts = table.by_key_part() if side == "k" else table.by_query_part()
    share = parts.get(writer.label)
    st.caption(f"{reader.label}'s score at its strongest cell of A (query {query + 1}, key {key + 1}): "
               f"{table.total:.3f}; {writer.label}'s part on the {'key' if side == 'k' else 'query'} side: "
               f"{'none' if share is None else f'{share:+.3f}'}")
    st.dataframe(pd.DataFrame(sorted(parts.items(), key=lambda p: -abs(p[1]))[:8], columns=["part", "score"]),
                 hide_index=True, key=f"{KEY}_qk")
    show_feature_cell(active, cap, reader, query, key, KEY)  # one level down: the score in dictionary features
