"""Hugging Face encoder-decoders in the app: folders of a models directory and hub ids typed in the sidebar,
loaded once per server (shared, read-only), decoded through the same interface as our checkpoints."""
from __future__ import annotations

from typing import Any

import streamlit as st

from transformer.model import DEFAULT_MAX_PARAMS, HFModelError, HFSeq2Seq, load_pretrained
from transformer.store import list_hf_folders
from ui.server import hf_models_root

from .options import HF, ActiveModel, ModelOption, select_model

ADDED_KEY = "sidebar_hf_added"  # hub ids / folders this session loaded from the sidebar field
NAME_KEY = "sidebar_hf_name"
PREFIX_KEY = "sidebar_hf_prefix"
MESSAGE_KEY = "sidebar_hf_message"
EXAMPLE_TEXT = "The house is small."


@st.cache_resource(max_entries=4, show_spinner=False)
def _load_shared_hf(name: str) -> tuple[Any, Any]:
    model, tokenizer, _ = load_pretrained(name, DEFAULT_MAX_PARAMS)
    return model, tokenizer


def loading_message(name: str) -> str:
    """What the spinner says while a Hugging Face model loads (shown after half a second, so not when cached)."""
    return f"Loading the Hugging Face model {name}…"


def load_shared_hf(name: str) -> tuple[Any, Any]:
    """(model, tokenizer) of a folder or hub id, shared read-only by all sessions; raises HFModelError."""
    with st.spinner(loading_message(name), show_time=True):
        return _load_shared_hf(name)


def hf_options() -> list[ModelOption]:
    """Folders of the models directory, then what this session loaded by name."""
    # a folder's id is its path inside the models directory, so a link names it and never a path of this machine
    options = [ModelOption(f"{HF}:{p.name}", p.name, HF, p) for p in list_hf_folders(hf_models_root())]
    known = {o.id for o in options}
    for name in st.session_state.get(ADDED_KEY, []):
        if f"{HF}:{name}" not in known:
            options.append(ModelOption(f"{HF}:{name}", name, HF))
    return options


def resolve_hf(option: ModelOption) -> ActiveModel:
    """The ActiveModel of a Hugging Face option; raises HFModelError."""
    name = option.id.split(":", 1)[1]
    model, tokenizer = load_shared_hf(str(option.path) if option.path is not None else name)
    prefix = st.session_state.get(PREFIX_KEY, "") or ""
    lm = HFSeq2Seq(model, tokenizer, option.name, prefix)
    return ActiveModel(option, f"{HF}:{name}:{prefix}", None, None, None, {"name": "huggingface"},
                       lm.describe(), ((EXAMPLE_TEXT, ""),), lm=lm)


def _on_load() -> None:
    """Load the typed folder or hub id; on success select it, else say why (the current model stays)."""
    name = (st.session_state.get(NAME_KEY) or "").strip()
    if not name:
        return
    try:
        load_shared_hf(name)
    except HFModelError as exc:
        st.session_state[MESSAGE_KEY] = ("error", str(exc))
        return
    added = st.session_state.setdefault(ADDED_KEY, [])
    if name not in added:
        added.append(name)
    select_model(f"{HF}:{name}")
    st.session_state[MESSAGE_KEY] = ("success", f"Loaded {name}.")


def hf_loader() -> None:
    """The sidebar's "Hugging Face model" field: a local folder or a hub id, and an optional source prefix."""
    with st.expander("Hugging Face model", icon=":material/hub:"):
        st.text_input("Folder or hub id", key=NAME_KEY, placeholder="Helsinki-NLP/opus-mt-en-de",
                      help=f"A save_pretrained folder or a hub id (safetensors only, no custom code). Folders in "
                           f"{hf_models_root()} are listed in the picker.")
        st.text_input("Source prefix", key=PREFIX_KEY, placeholder="translate English to German: ",
                      help="Prepended to every input (T5 task prefixes).")
        st.button("Load", key="sidebar_hf_load", on_click=_on_load, icon=":material/download:")
        message = st.session_state.pop(MESSAGE_KEY, None)
        if message is not None:
            (st.error if message[0] == "error" else st.success)(message[1])
