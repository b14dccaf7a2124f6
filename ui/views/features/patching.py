"""Compare's edit mode, part two: activation patching. Which activation of the clean input (A) carries the answer
its edit (B) lacks: each site copied from A's run into B's, both fed A's output up to the target step, and how much
of A's answer comes back. A background job (progress, time left, Cancel); the exact run or the one-pass estimate
with the exact figures of its top ten; a click on a cell replays the patched decode (encoder and decoder-side sites
alike)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from transformer.analysis import (
    ENCODER_OUTPUT,
    HEAD_POSITIONS,
    HEADS,
    RESIDUAL_STREAM,
    EditComparison,
    PatchingSetup,
    Site,
    find_site,
    patch_sites,
    patched_decode,
    patching_agreement,
    prepare_patching,
    preview_patching,
)
from transformer.charts import PATCH_CELL, clicked_patch_cell, patching_heatmap
from transformer.decode import ALL_TITLES, DecodeResult, InputError
from ui.models import ActiveModel
from ui.server import shared

from ..kit import (
    LINK_PARAMS,
    Column,
    JobTexts,
    Selection,
    analysis_result,
    can_start,
    chart_heading,
    greedy,
    md,
    md_token,
    model_caption,
    show_chart,
    show_chips,
    show_small_table,
    start_button,
)

KEY = "compare_patch"
PATCH_FROM_KEY, PATCH_SITE_KEY = LINK_PARAMS["decode"]["pfrom"], LINK_PARAMS["decode"]["psite"]  # Decode's link
SITE_TITLES = {ENCODER_OUTPUT: "the encoder output at each source position", HEADS: "each head's output",
               RESIDUAL_STREAM: "the residual stream by layer and position",
               HEAD_POSITIONS: "each encoder head at each source position"}
EXACT, ESTIMATE = "exact", "estimate"
PATCHING_TEXTS = JobTexts(cancelled="Patching cancelled: nothing was kept.", cancelled_icon=":material/stop_circle:",
                          refused="Cannot patch: {error}", refused_icon=":material/block:")
TOP_COLUMNS = {"cell": Column("site"), "estimated_recovery": Column("estimated recovery", "%.3f"),
               "recovery": Column("exact recovery", "%.3f", "Measured by patching this site alone.")}
TOP_RAW_COLUMNS = {"cell": Column("site"), "estimate": Column("estimated difference", "%+.4f"),
                   "difference": Column("exact difference", "%+.4f", "metric − B (nats), measured by patching this "
                                        "site alone.")}


@dataclass(frozen=True)
class PatchingRun:
    """A finished patching run as the page keeps it: the frame, the experiment, which weights, which method."""

    frame: pd.DataFrame
    setup: PatchingSetup
    weights: str  # which model and weights the job ran on (a model retrained meanwhile is named as it was)
    how: str  # EXACT or ESTIMATE
    seconds: float


def _run(active: ActiveModel, c: EditComparison, step: int, contrast: str, sites: tuple[str, ...], how: str,
         weights: str, progress) -> PatchingRun:
    adapter = active.adapter
    setup = prepare_patching(adapter, c.a.source_text, c.b.source_text, step=step, contrast=contrast or None,
                             output=[s.token_id for s in c.a.steps])
    if how == ESTIMATE:
        frame = preview_patching(adapter, setup, sites, progress=progress)
        return PatchingRun(frame, setup, weights, how, 0.0)
    result = patch_sites(adapter, setup, sites, progress=progress)
    return PatchingRun(result.frame, setup, weights, how, result.seconds)


def _inputs(active: ActiveModel, c: EditComparison) -> tuple[int, str, tuple[str, ...]]:
    """The target step (0-based), the contrast token and the sites, from their widgets."""
    n = len(c.a.steps)
    divergence = c.first_divergence
    row = c.steps.loc[divergence] if divergence is not None else None
    if st.session_state.get(f"{KEY}_step") not in range(1, n + 1):
        st.session_state[f"{KEY}_step"] = int(row["step_a"]) if row is not None and not pd.isna(row["step_a"]) else 1
    if f"{KEY}_contrast" not in st.session_state:
        st.session_state[f"{KEY}_contrast"] = str(row["token_b"]) if row is not None and row["token_b"] else ""
    available = [s for s in (ENCODER_OUTPUT, HEADS, RESIDUAL_STREAM, HEAD_POSITIONS)
                 if s not in (ENCODER_OUTPUT, HEAD_POSITIONS) or active.family.has_cross]
    st.session_state.setdefault(f"{KEY}_sites", [s for s in available if s != HEAD_POSITIONS])  # per position: asked
    c_step, c_contrast, c_sites = st.columns([2, 2, 4], vertical_alignment="bottom")
    with c_step:
        step = st.selectbox("Target: A's output token", list(range(1, n + 1)), key=f"{KEY}_step",
                            format_func=lambda t: f"{t} ‹{c.a.steps[t - 1].token}›",
                            help="The step whose token the metric reads; both inputs are fed A's output up to it.")
    with c_contrast:
        contrast = st.text_input("Contrast token", key=f"{KEY}_contrast", max_chars=100,
                                 help="The metric is log p(A's token) − log p(this token) (a logit difference); "
                                      "empty: log p(A's token).")
    with c_sites:
        sites = st.multiselect("Patch", available, key=f"{KEY}_sites", format_func=lambda s: SITE_TITLES.get(s, s))
    return step - 1, contrast.strip(), tuple(s for s in available if s in sites)


def show_patching(active: ActiveModel, c: EditComparison) -> None:
    """The patching section under the edit comparison."""
    st.subheader("Where does A's answer live? Activation patching", anchor=False)
    st.caption("Each site's activation is copied from A's run into B's (both fed A's output up to the target step), "
               "and the recovery (metric − B) / (A − B) says how much of A's answer comes back: 1 all of it, 0 none "
               "(Meng et al. 2022; Heimersheim & Nanda 2024). Positions of inputs of different lengths are matched "
               "by the alignment above; unmatched ones are left unpatched.")
    step, contrast, sites = _inputs(active, c)
    if not sites:
        st.info("Pick at least one kind of site to patch.", icon=":material/info:")
        return
    weights = model_caption("", active).replace("** · ", "", 1).strip("* ")
    identities = {how: ("patching", how, active.cache_key, c.a.source_text, c.b.source_text, step, contrast, sites)
                  for how in (EXACT, ESTIMATE)}
    shown = None
    for how, identity in identities.items():
        view = _collect(active, c, identity, step, contrast, sites, how, weights)
        if view is not None:
            shown = view
    if can_start(*identities.values()):
        left, right = st.columns(2)
        start_button("Patch every site (exact)", identities[EXACT], key=f"{KEY}_{EXACT}", button_key=f"{KEY}_exact",
                     icon=":material/science:", where=left, width="stretch")
        start_button("Estimate in one pass (gradient)", identities[ESTIMATE], key=f"{KEY}_{ESTIMATE}",
                     button_key=f"{KEY}_estimate", icon=":material/bolt:", where=right, width="stretch",
                     help="Attribution patching: one forward and one backward estimate every site; the ten largest "
                          "are then measured exactly, and the Spearman correlation says how well the estimate ranks.")
    if shown is not None:
        show_patching_result(active, shown)


def _collect(active: ActiveModel, c: EditComparison, identity: tuple, step: int, contrast: str,
             sites: tuple[str, ...], how: str, weights: str) -> PatchingRun | None:
    n = "every site" if how == EXACT else "an estimate of every site"
    return analysis_result(identity, f"Patching {n}",
                           lambda progress: _run(active, c, step, contrast, sites, how, weights, progress),
                           key=f"{KEY}_{how}", texts=PATCHING_TEXTS)


def _summary(view: PatchingRun) -> None:
    s = view.setup
    method = ("one-pass estimate; exact figures for its top ten" if view.how == ESTIMATE
              else f"exact, {len(view.frame)} patched runs in {view.seconds:.1f} s")
    st.caption(f"Weights: {md(view.weights)} · target step {s.step + 1} · metric {md(s.metric_name)}: A "
               f"{s.clean_metric:.3f}, B {s.corrupted_metric:.3f} · {method}")
    if s.barely:
        st.warning(f"The edit barely moves the target: A and B differ by {abs(s.gap):.3f} nats (under 0.1), so no "
                   "ratio is meaningful; the maps show the raw differences metric − B instead.",
                   icon=":material/balance:")
    for stack, (only_a, only_b) in s.unaligned().items():
        st.info(f"Left unpatched ({stack}): A's positions {list(only_a) or 'none'} and B's {list(only_b) or 'none'} "
                "have no partner in the other input.", icon=":material/link_off:")


def show_patching_result(active: ActiveModel, view: PatchingRun) -> None:
    """The maps of a finished run (a click replays the patched decode), and for an estimate its check."""
    _summary(view)
    frame = view.frame
    if view.how == ESTIMATE:
        column = "estimate" if view.setup.barely else "estimated_recovery"
    else:
        column = "difference" if view.setup.barely else "recovery"
    scale = {"estimated_recovery": "recovery"}.get(column, column)
    for (site, where), part in frame.groupby(["site", "where"], sort=False):
        kind = ALL_TITLES.get(where, f"{where} stack")
        title = SITE_TITLES[site]
        shown = f"Estimated: {title}" if view.how == ESTIMATE else f"{title[0].upper()}{title[1:]}"
        chart_heading(f"{shown} · {kind}")
        chart = patching_heatmap(part.assign(**{scale: part[column]}), scale)
        show_chart(chart, key=f"{KEY}_map_{site}_{where}".replace(" ", "_"), on_select="rerun",
                   selection_mode=[PATCH_CELL], width="content")
    if view.how == ESTIMATE:
        rho = patching_agreement(frame, frame)
        st.caption(f"Spearman correlation of the estimate with the exact figures over its top ten: {rho:.3f}")
        top = frame.dropna(subset=["difference"]).assign(
            cell=lambda f: [f"{s} · {w} · L{lay} H{h + 1 if h >= 0 else '–'} · pos {p}"
                            for s, w, lay, h, p in zip(f["site"], f["where"], f["layer"], f["head"], f["position"],
                                                       strict=True)])
        show_small_table(top, TOP_RAW_COLUMNS if view.setup.barely else TOP_COLUMNS, key=f"{KEY}_top")
    _replay(active, view)


def _replay(active: ActiveModel, view: PatchingRun) -> None:
    """The patched decode of the last clicked cell, or why a decode cannot replay it."""
    cell = None
    for key, state in st.session_state.items():
        if isinstance(key, str) and key.startswith(f"{KEY}_map_"):
            cell = clicked_patch_cell(state) or cell
    if cell is None:
        st.caption("Click a cell to decode B with that activation patched in from A.")
        return
    adapter = active.adapter
    replays = st.session_state.setdefault(f"{KEY}_replays", {})  # a rerun (any widget) does not decode again
    s = view.setup
    mark = (view.weights, s.clean_text, s.corrupted_text, s.step, tuple(sorted(cell.items())))
    try:
        site = find_site(adapter, view.setup, cell)
        if mark not in replays:
            replays.clear()  # the last click's decode only
            replays[mark] = patched_decode(adapter, view.setup, site)
        result = replays[mark]
    except (KeyError, InputError) as exc:
        st.info(str(exc).strip("'\""), icon=":material/info:")
        return
    st.markdown(f"**B with {_site_label(site)} patched in from A:**")
    show_chips(result.output_tokens, caption="patched decode of B")
    st.page_link("pages/decode.py", label="Open this patched decode on Decode", icon=":material/skip_next:",
                 query_params={"model": active.option.id, "text": view.setup.corrupted_text,
                               "pfrom": view.setup.clean_text, "psite": _site_value(site, view.setup.step)})


def _site_label(site: Site) -> str:
    return (f"{md(site.site)} · {md(site.where)} · layer {site.layer} · "
            f"{'' if site.head < 0 else f'head {site.head + 1} · '}position {site.position} ‹{md_token(site.token)}›")


def _site_value(site: Site, step: int) -> str:
    """The site as Decode's link names it (`psite`): site|where|layer|head|position|target step (1-based; a
    decoder-side site's values are those of that step)."""
    return f"{site.site}|{site.where}|{site.layer}|{site.head}|{site.position}|{step + 1}"


@shared
def _patched(model_key: str, _active: ActiveModel, clean: str, corrupted: str, value: str, output: tuple[int, ...]
             ) -> tuple[DecodeResult, str]:
    adapter = _active.adapter
    name, where, layer, head, position, *step = value.split("|")
    setup = prepare_patching(adapter, clean, corrupted, step=int(step[0]) - 1 if step else 0, output=output)
    site = find_site(adapter, setup, {"site": name, "where": where, "layer": int(layer), "head": int(head),
                                 "position": int(position)})
    return patched_decode(adapter, setup, site), _site_label(site)


def _stop_patching() -> None:
    for key in (PATCH_FROM_KEY, PATCH_SITE_KEY):
        st.session_state.pop(key, None)


def show_patched_link(sel: Selection) -> None:
    """On Decode, opened from a click on Compare's patching map (`pfrom`, `psite` in the link): the page's input
    (`sel.text`, through `sel.model`) decoded with that site patched in from the other input, beside its own."""
    active, text = sel.model, sel.text
    clean, value = st.session_state.get(PATCH_FROM_KEY), st.session_state.get(PATCH_SITE_KEY)
    if not clean or not value:
        return
    with st.expander(f"Patched in from ‹{clean}›", expanded=True, icon=":material/swap_horiz:"):
        try:  # both plain decodes are the pages' cached ones (Compare decoded both inputs; this page, its own)
            plain, clean_output = greedy(active, text), tuple(s.token_id for s in greedy(active, clean).steps)
            with st.spinner("Decoding with the patch…", show_time=True):
                patched, label = _patched(active.cache_key, active, clean, text, value, clean_output)
        except (InputError, KeyError) as exc:
            st.info(f"No patched decode for this input: {str(exc).strip(chr(39) + chr(34))}", icon=":material/info:")
        else:
            st.markdown(f"**This input with {label} patched in from ‹{md(clean)}›:**")
            left, right = st.columns(2)
            with left:
                show_chips(plain.output_tokens, caption="its own decode")
            with right:
                show_chips(patched.output_tokens, caption="patched decode")
        st.button("Stop patching", key="decode_patch_stop", on_click=_stop_patching, icon=":material/close:")
