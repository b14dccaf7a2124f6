"""A link opens a page as it was: a page's widgets restored from st.query_params, and written back after every run.

app.py calls `restore(page)` before the sidebar and the page are drawn, and `write(page)` after the page ran; a
fragment that changes what the link names (the Decode page's step) calls `write` too. Parameters are restored only
when the URL differs from what this session last wrote (a shared link, a reload, a hand-edited URL), so widgets
stay the truth while the user clicks. The format itself is in ui.link_format.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import streamlit as st
from streamlit.navigation.page import StreamlitPage
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException

from transformer.analysis import METHODS
from transformer.charts import qr_svg
from transformer.decode import MAX_INPUT_CHARS, InputError
from transformer.model import Head
from ui.models import LIVE, MODEL_KEY, UPLOAD, ActiveModel, current_model, model_options
from ui.server import DOC_STATE_KEY, PUBLIC_URL_ENV, ShareAddress, page_titled, share_address
from ui.views import (
    LINK_OPENS,
    LINK_PARAMS,
    PRESENT_KEY,
    REFERENCE_FOR_KEY,
    REFERENCE_KEY,
    TEXT_KEY,
    TEXT_TASK_KEY,
    TOUR,
    default_text,
    greedy,
    map_kind,
    presenting,
    teacher,
)
from ui.views import decode_state as ds

from .link_format import ModelSizes, check_sizes, labels_to_heads, parse_params, to_params

WRITTEN_KEY = "studio_url_written"
QR_KEY = "studio_present_qr"  # presenter mode's QR code of the page's link (its margin is in presenter.py's CSS)
QR_SHOWN_KEY = "studio_present_qr_shown"
NOTES_KEY = "studio_url_notes"
PAGE_WIDGETS = LINK_PARAMS  # page -> link parameter -> the session-state key of the widget it restores
# link value <-> widget value where they differ: the ablation picker holds labels ("cross:L1H2"), links triples
_TO_WIDGET = {"ablate": lambda heads: [Head(*h).label for h in heads], "masks": list}
_FROM_WIDGET = {"ablate": lambda labels: labels_to_heads(list(labels)) or None,
                # sampling settings at their defaults (greedy; no top-k or top-p cut; seed 0) stay out of the link
                "temperature": lambda v: v or None, "sample_topk": lambda v: v or None,
                "top_p": lambda v: None if v >= 1 else v, "seed": lambda v: v or None,
                # an encoder-only model's Decode page: no pair, no masks and all segments stay out of the link
                "pair": lambda v: v or None, "masks": lambda v: tuple(v) or None,
                "segment": lambda v: None if v == "all" else v,
                # on by default (the gold alignment outlined), two inputs through one model: out of the link
                "gold": lambda v: None if v else False, "way": lambda v: None if v == "inputs" else v,
                "pred": lambda v: v or None,  # the first prediction: out of the link
                "votes": lambda v: tuple(v) or None,  # a revealed poll's counts
                "words": lambda v: v or None,  # pieces as the tokenizer cut them (the default): out of the link
                "group": lambda v: None if v == "token" else v,  # a document's tokens ungrouped: out of the link
                "oscale": lambda v: None if v == "log" else v,  # the overview's default colour scale: out of it
                "attr": lambda v: None if v == METHODS[0] else v}  # the default method: no open expander


def page_name(title: str) -> str:
    """The PAGE_WIDGETS name of a page from its navigation title."""
    return page_titled(title).name


def _sizes(active: ActiveModel) -> ModelSizes:
    return ModelSizes.from_counts(active.adapter.head_counts())


def _restore_model(values: dict[str, Any], notes: list[str]) -> None:
    ids = {o.id for o in model_options()}
    for name, key in (("model", MODEL_KEY), ("compare", PAGE_WIDGETS["compare"]["compare"])):
        if name not in values:
            continue
        if values[name] in ids:
            st.session_state[key] = values[name]
        elif values[name].startswith(f"{UPLOAD}:"):
            notes.append(f"{name} {values[name]!r} is not available here (an upload stays in the browser session "
                         "that made it)")
        elif values[name].startswith(f"{LIVE}:"):
            notes.append(f"{name} {values[name]!r} is not available here (that training run is no longer on this "
                         "server; its autosave is listed under Saved run)")
        else:
            notes.append(f"{name} {values[name]!r} is not available here")
        values.pop(name)


def _n_steps(active: ActiveModel, values: dict[str, Any], text: str) -> int | None:
    """Steps of the output a restored Decode view shows; None when the text cannot be decoded."""
    top_k = values.get("topk", 5)
    try:
        if values.get("view") == "teacher" and values.get("ref", "").strip():
            return len(teacher(active, text, values["ref"], top_k=top_k).steps)
        forced = ds.forced_prefix(active.task_name, text)
        if values.get("view") == "forced" and forced is not None:
            return len(greedy(active, text, top_k=top_k, forced=forced.tokens).steps)
        return len(greedy(active, text, top_k=top_k).steps)
    except InputError:  # an input the model cannot read: the page says why
        return None


def _restore_forced(active: ActiveModel, values: dict[str, Any], notes: list[str], text: str) -> None:
    """A link's forced token (`force=STEP:TOKEN`): the greedy output up to that step, then the token; a token the
    model cannot output, or a step past the output, gets a note."""
    if "force" not in values:
        if values.get("view") == "forced":
            notes.append("view='forced' ignored (the link names no forced token)")
            values.pop("view")
        return
    step, token = values.pop("force")
    top_k = values.get("topk", 5)
    try:
        free = greedy(active, text, top_k=top_k)
        if step > len(free.steps):
            raise InputError(f"the output has {len(free.steps)} steps")
        tokens = (*ds.fed_before(free.trace, step - 1), token)
        greedy(active, text, top_k=top_k, forced=tokens)  # raises for a token the model cannot output
    except InputError as exc:
        notes.append(f"force={step}:{token[:40]!r} ignored ({str(exc).rstrip('.')})")
        if values.get("view") == "forced":
            values.pop("view")
        return
    st.session_state[ds.FORCED_KEY] = ds.ForcedPrefix(active.task_name, text, tokens)


def _restore_widgets(page: str, active: ActiveModel, values: dict[str, Any], notes: list[str]) -> None:
    state = st.session_state
    widgets = PAGE_WIDGETS.get(page, {})
    sizes = _sizes(active)
    kind = values.get("kind") or (state.get(widgets["kind"]) if "kind" in widgets else None)
    if kind is None or not sizes.has(kind):
        kind = map_kind(active.family)
    values, size_notes = check_sizes(values, sizes, kind)
    notes += size_notes
    text = values.get("text")
    if text is not None:
        state[TEXT_KEY], state[TEXT_TASK_KEY] = text, active.task_name
    text = text if text is not None else state.get(TEXT_KEY, default_text(active))
    if "ref" in values:
        state[REFERENCE_FOR_KEY], state[REFERENCE_KEY] = (active.task_name, text), values["ref"]
    if page == "decode":
        _restore_forced(active, values, notes, text)
    if page == "decode" and "inside" in values and not sizes.has(values["inside"]):
        notes.append(f"inside={values.pop('inside')} ignored (this model has no such attention)")
    if page == "learn" and values.get("stage", 0) >= len(TOUR):
        notes.append(f"stage {values.pop('stage') + 1} ignored (the tour has {len(TOUR)})")
    if "step" in values and page == "decode":
        n_steps = _n_steps(active, values, text)
        if n_steps is not None and values["step"] > n_steps:
            notes.append(f"step {values.pop('step')} ignored (the output has {n_steps})")
        else:
            state[ds.STEP_FOR_KEY] = (active.task_name, text)  # keeps prepare_step from resetting it to 1
    for name, key in widgets.items():
        if name in values:
            state[key] = _TO_WIDGET.get(name, lambda v: v)(values[name])
    for name, key in LINK_OPENS.get(page, {}).items():
        if name in values:
            state[key] = True  # the expander whose widget the link names


def restore(page: str) -> None:
    """Apply a URL this session did not write (a shared link, a reload) to the session's widgets, with notes."""
    params = st.query_params.to_dict()
    if params == st.session_state.get(WRITTEN_KEY):
        st.session_state[NOTES_KEY] = []
        return
    values, notes = parse_params(params)
    if "present" in values:
        st.session_state[PRESENT_KEY] = values.pop("present")
    _restore_model(values, notes)
    active = current_model() if values else None
    if active is not None:
        _restore_widgets(page, active, values, notes)
    st.session_state[NOTES_KEY] = notes
    st.session_state[WRITTEN_KEY] = params


def show_notes() -> None:
    """The parameters of the opened link that did not fit, in one short note."""
    notes = st.session_state.get(NOTES_KEY) or []
    if notes:
        st.info("Parts of this link were ignored: " + "; ".join(notes) + ". Showing the defaults instead.",
                icon=":material/link_off:")


def link_values(page: str) -> dict[str, Any]:
    """What the page shows now, as link values (from the widgets' session state)."""
    state = st.session_state
    values: dict[str, Any] = {"model": state.get(MODEL_KEY)}
    for name, key in PAGE_WIDGETS.get(page, {}).items():
        value = state.get(key)
        values[name] = _FROM_WIDGET[name](value) if name in _FROM_WIDGET and value is not None else value
    if page == "attention" and values.get("mode") != "teacher":
        values.pop("ref", None)
    if page == "decode":
        forced = state.get(ds.FORCED_KEY)
        if isinstance(forced, ds.ForcedPrefix) and forced.text == state.get(PAGE_WIDGETS["decode"]["text"]):
            values["force"] = (forced.step + 1, forced.tokens[-1])
        elif values.get("view") == ds.FORCED:
            values.pop("view")
    if not values.get("ref"):
        values.pop("ref", None)
    if page == "decode":  # Decode's expanders: in the link while open
        if not values.get("lens"):
            values.pop("lens", None)
        if not state.get(LINK_OPENS["decode"]["inside"]):
            values.pop("inside", None)
    if page in ("decode", "attention"):  # a document's hash while its decode is shown (its text stays here)
        values["doc"] = state.get(DOC_STATE_KEY)
        if values["doc"] is not None or len(values.get("text") or "") > MAX_INPUT_CHARS:
            values.pop("text", None)  # a document's text stays on the server: the link names it by its hash
        if values["doc"] is None:  # the document's decode steps: in the link with its hash only
            values.pop("dsteps", None)
            values.pop("zoom", None)  # the zoomed region too
            values.pop("oscale", None)  # and the overview's colour scale
    if page == "compare" and values.get("cmode") != "edit":  # two models (the default): no edit in the link
        values.pop("cmode", None)
        values.pop("edit", None)
    values["present"] = True if presenting() else None
    return values


def write(page: str) -> None:
    """Put the page's link into the URL (only when it changed)."""
    params = to_params(link_values(page))
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    st.session_state[WRITTEN_KEY] = params


def show_link_qr() -> None:
    """In presenter mode, a QR code of the page's link, exactly what "Copy link" shows (an address the room reaches,
    without presenter mode), so an audience can open the same page on their phones, and under it the address it holds;
    presenter mode's CSS gives it a margin of its own. Not when the browser did not say the page's address: a link
    without it opens nothing on a phone."""
    st.session_state[QR_SHOWN_KEY] = True
    if not presenting() or not st.context.url:
        return
    address = share_address(st.context.url)
    try:
        code = qr_svg(share_link(address))
    except ValueError:  # a link too long for a code a phone reads well
        return
    with st.container(key=QR_KEY):
        st.image(code, caption="Scan to open this view", width=120)
        st.caption(address.shown if address.reachable else f"{address.shown}: this machine only (no network found)")


def write_link(page: str) -> None:
    """Put the page's link into the URL, then (presenter mode) show its QR code; for a fragment that changes what
    the link names (the Decode page's step)."""
    write(page)
    show_link_qr()


def run_page(page: StreamlitPage, name: str) -> None:
    """Run the page (`name`: its name in links), then write its link into the URL (and show its QR code in presenter
    mode, unless the page did), also when it stopped early. Not when it asked for a rerun: st.rerun has already taken
    the URL along, and writing now would make the rerun see a URL it did not write."""
    st.session_state[QR_SHOWN_KEY] = False
    try:
        page.run()
    except RerunException:
        raise
    except StopException:
        _finish(name)
        raise
    _finish(name)


ONCE = ("focus",)  # parameters a page acts on in the run that opens the link, then drops (the link loses them)


def _finish(name: str) -> None:
    for once in ONCE:  # after a run that was not cut short for a rerun: done
        if once in PAGE_WIDGETS.get(name, {}):
            st.session_state.pop(PAGE_WIDGETS[name][once], None)
    write(name)
    if not st.session_state.get(QR_SHOWN_KEY):
        show_link_qr()


def share_link(address: ShareAddress | None) -> str:
    """The page's link as others open it: at `address` (None: no address, the parameters alone), with the page's
    parameters but not presenter mode (the audience gets the plain view)."""
    params = {name: value for name, value in st.query_params.to_dict().items() if name != "present"}
    return f"{address.url if address is not None else ''}?{urlencode(params)}"


def current_link() -> str:
    """The link of the view as it is now, as the room opens it: the page's address (when the browser told it) as
    other machines reach it, and its parameters without presenter mode."""
    return share_link(share_address(st.context.url) if st.context.url else None)


@st.fragment
def share_control() -> None:
    """"Copy link": opening it shows the link of the view as it is now, with a copy button. Closed, it draws nothing
    inside (two elements less on every page's first view)."""
    with st.popover("Copy link", icon=":material/link:", on_change="rerun", key="studio_share",
                    width="stretch") as box:
        if box.open:  # drawn when opened (a rerun of this fragment), so it is the link of the view as it is now
            st.code(current_link(), language=None, wrap_lines=True)
            st.caption("Opening this link shows this page with the same model, input, step, layer and head.")
            if st.context.url and not share_address(st.context.url).reachable:
                st.caption(f"Only this machine can open it: no network address was found (set {PUBLIC_URL_ENV}).")
