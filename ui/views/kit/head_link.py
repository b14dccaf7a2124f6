"""A link to one head's page (pages/head.py) with its link parameters: the model and the head; and the hand-off
to that page from another view (its pickers set here, not by the view)."""
from __future__ import annotations

import streamlit as st

from transformer.model import Head
from ui.models import MODEL_KEY

from .link_params import LINK_PARAMS

HEAD_PAGE = "pages/head.py"


def head_link_params(head: Head) -> dict[str, str]:
    """The head page's link parameters for `head` (layer and head 1-based) and the model open now."""
    return {"model": str(st.session_state.get(MODEL_KEY, "")), "kind": head.kind, "layer": str(head.layer + 1),
            "head": str(head.head + 1)}


def open_head_page(head: Head) -> None:
    """Switch to the head's page (its pickers set to the head), with its link: the model and the head."""
    keys = LINK_PARAMS["head"]
    st.session_state[keys["kind"]], st.session_state[keys["layer"]] = head.kind, head.layer
    st.session_state[keys["head"]] = head.head
    st.switch_page(HEAD_PAGE, query_params=head_link_params(head))


def head_page_link(head: Head | None, label: str = "Open this head's page") -> None:
    """A small link to the head's page; for the mean of heads (None) a disabled one saying to pick a head."""
    if head is None:
        st.page_link(HEAD_PAGE, label=label, icon=":material/open_in_new:", disabled=True,
                     help="Pick one head (not the mean of heads) to open its page.")
        return
    st.page_link(HEAD_PAGE, label=label, icon=":material/open_in_new:", query_params=head_link_params(head),
                 help=f"{head.label} over a corpus: its strongest rows, distances, tokens and composition partners.")


def picker_head_link(key: str, kind: str | None, head: int | None) -> None:
    """Beside the Attention or Decode page's head picker (widget `key`): the link to the picked head's page, its
    layer read from the page's layer picker; nothing on other pages."""
    page = next((p for p in ("attention", "decode") if LINK_PARAMS[p]["head"] == key), None)
    layer = st.session_state.get(LINK_PARAMS[page]["layer"]) if page else None
    if page is None or kind is None or not isinstance(layer, int):
        return
    head_page_link(None if head is None else Head(kind, layer, head))


def _pick_first_head(key: str) -> None:
    st.session_state[key] = 0


def per_head_refusal(message: str, head_key: str | None, button_key: str) -> None:
    """A view that is per head, shown the mean of heads: `message`, and the click that resolves it ("Show head 1"
    sets the page's head picker, widget `head_key`; no button on a page without one)."""
    if head_key is None:
        st.info(message, icon=":material/info:")
        return
    with st.container(horizontal=True, vertical_alignment="center"):
        st.info(message, icon=":material/info:", width="stretch")
        st.button("Show head 1", key=button_key, on_click=_pick_first_head, args=(head_key,),
                  icon=":material/filter_1:", help="Pick head 1 in the head picker above.")
