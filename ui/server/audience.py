"""Who may do what: in a talk, sessions from other machines are the audience (the server's setting decides). They
look at every view, step, pick heads and switch a view's options; training, uploads, loading a model by name and long
analyses stay the speaker's, whose laptop the server runs on. Views and the Train page ask here, never st.context."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec

import streamlit as st

from .local_addresses import canonical, is_this_machine
from .settings import audience_mode
from .share_address import is_loopback, network_address

P = ParamSpec("P")
_WHY = "this studio runs on the speaker's machine"
REFUSALS = {  # what the audience is told in place of a control it may not use
    "train": f"Training is the speaker's: {_WHY}. You can watch a run, but not start, stop, resume or save one.",
    "upload": f"Uploading a bundle is the speaker's: {_WHY}. The models in the picker are yours to explore.",
    "load": f"Loading a model by name is the speaker's: {_WHY}. The models in the picker are yours to explore.",
    "sweep": f"Sweeps are the speaker's: {_WHY}, and a sweep keeps it busy for minutes. Every view, step and head is "
             "yours to explore.",
    "agreement": f"Attribution over every step is the speaker's: {_WHY}, and it keeps it busy for minutes. The "
                 "Decode page attributes one step at a time.",
    "render": f"Files made from a view (animations, slides, images, replays) are the speaker's: {_WHY}, and each "
              "takes it seconds to render. Every view is yours to explore here.",
}


def client_address() -> str | None:
    """The address this session's browser connects from (None: this machine's loopback, or no browser)."""
    found = st.context.ip_address  # Streamlit says None for 127.0.0.1 and ::1
    return found if isinstance(found, str) and found else None  # a test harness's stand-in client is no address


def is_local(address: str | None) -> bool:
    """Whether a client address is this machine: no address (loopback), a loopback one, the server's network address
    or any address of any of its interfaces, in any form (`::ffff:192.0.2.2` is 192.0.2.2)."""
    if address is None or is_loopback(address) or is_this_machine(address):
        return True
    network, found = network_address(), canonical(address)
    if network is None:
        return False
    return found == canonical(network) if found is not None else address == network


def is_audience() -> bool:
    """Whether this session is the audience: by $ATTENTION_STUDIO_AUDIENCE, "remote" (sessions from other machines,
    the default), "none" or "all"."""
    mode = audience_mode()
    if mode != "remote":
        return mode == "all"
    return not is_local(client_address())


def refusal(action: str) -> str:
    """Why `action` ("train", "upload", "load", "sweep", "agreement", "render") is not the audience's."""
    return REFUSALS[action]


def audience_refusal(action: str) -> str | None:
    """Why `action` is not this session's (a control's help where it is switched off), or None for the speaker."""
    return refusal(action) if is_audience() else None


def refuse(action: str) -> bool:
    """In an audience session, say why `action` is the speaker's (drawn where its control would be) and return True;
    the speaker's session: False, nothing drawn."""
    if not is_audience():
        return False
    st.info(refusal(action), icon=":material/co_present:")
    return True


def speaker_only(callback: Callable[P, None]) -> Callable[P, None]:
    """A widget callback that does nothing in an audience session (its control is not offered there either)."""
    @functools.wraps(callback)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
        if not is_audience():
            callback(*args, **kwargs)
    return guarded
