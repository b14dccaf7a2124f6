"""Hugging Face models in the app (encoder-decoders and causal language models): folders of a models directory and
hub ids typed in the sidebar, loaded once per server (shared, read-only), decoded through the same interface as our
checkpoints. Each session gets its own adapter over the shared weights (its source prefix, its chat switch)."""
from __future__ import annotations

from typing import Any

import streamlit as st

from transformer.adapters import (
    DEFAULT_MAX_PARAMS,
    HFCausalLM,
    HFMaskedLM,
    HFModelError,
    HFSeq2Seq,
    InspectableModel,
    adapter_for,
    load_hf_model,
)
from transformer.store import list_hf_folders
from ui.server import hf_models_root, refuse, speaker_only

from .options import HF, ActiveModel, ModelOption, select_model

ADDED_KEY = "sidebar_hf_added"  # hub ids / folders this session loaded from the sidebar field
NAME_KEY = "sidebar_hf_name"
PREFIX_KEY = "sidebar_hf_prefix"
CHAT_KEY = "sidebar_hf_chat"  # "Format as chat": a causal model's prompt through its tokenizer's chat template
MESSAGE_KEY = "sidebar_hf_message"
EXAMPLE_TEXT = "The house is small."


@st.cache_resource(max_entries=4, show_spinner=False)
def _load_shared_hf(name: str) -> InspectableModel:
    return load_hf_model(name, max_params=DEFAULT_MAX_PARAMS)  # the adapter its config asks for, every safety check


def loading_message(name: str) -> str:
    """What the spinner says while a Hugging Face model loads (shown after half a second, so not when cached)."""
    return f"Loading the Hugging Face model {name}…"


def load_shared_hf(name: str) -> InspectableModel:
    """The adapter of a folder or hub id (its model and tokenizer shared read-only by all sessions); raises
    HFModelError."""
    with st.spinner(loading_message(name), show_time=True):
        return _load_shared_hf(name)


def hf_folder_options() -> list[ModelOption]:
    """Folders of the models directory (every session sees them)."""
    # a folder's id is its path inside the models directory, so a link names it and never a path of this machine
    return [ModelOption(f"{HF}:{p.name}", p.name, HF, p) for p in list_hf_folders(hf_models_root())]


def hf_options() -> list[ModelOption]:
    """Folders of the models directory, then what this session loaded by name."""
    options = hf_folder_options()
    known = {o.id for o in options}
    for name in st.session_state.get(ADDED_KEY, []):
        if f"{HF}:{name}" not in known:
            options.append(ModelOption(f"{HF}:{name}", name, HF))
    return options


def resolve_hf(option: ModelOption, *, new_session: bool = False) -> ActiveModel:
    """The ActiveModel of a Hugging Face option with this session's sidebar settings (`new_session`: with a new
    session's, no source prefix and no chat template, and no spinner: for the server, outside any session);
    raises HFModelError."""
    name = option.id.split(":", 1)[1]
    path = str(option.path) if option.path is not None else name
    shared = _load_shared_hf(path) if new_session else load_shared_hf(path)
    adapter = session_adapter(shared, option.name, *(("", False) if new_session else (None, None)))
    options = f"{getattr(adapter, 'prefix', '')}:{int(getattr(adapter, 'chat', False))}"
    return ActiveModel(option, f"{HF}:{name}:{options}", None, None, None, {"name": "huggingface"},
                       _card(adapter), ((EXAMPLE_TEXT, ""),), adapter=adapter)


def _card(adapter: InspectableModel) -> dict[str, Any]:
    """The sidebar card of a Hugging Face model, as its adapter describes it."""
    if not isinstance(adapter, HFSeq2Seq | HFCausalLM | HFMaskedLM):
        raise TypeError(f"{type(adapter).__name__} is not a Hugging Face adapter")
    return adapter.describe()


def chat_available(adapter: InspectableModel | None) -> bool:
    """Whether the model is a causal language model whose tokenizer has a chat template."""
    return isinstance(adapter, HFCausalLM) and HFCausalLM.has_chat_template(adapter.tokenizer)


def session_adapter(shared: Any, name: str, prefix: str | None = None, chat: bool | None = None
                    ) -> InspectableModel:
    """This session's adapter over the shared weights: an encoder-decoder with the sidebar's source prefix, a causal
    language model with or without its chat template (`prefix`, `chat`: these instead of the sidebar's)."""
    if isinstance(shared, HFCausalLM):
        chat = bool(st.session_state.get(CHAT_KEY)) if chat is None else chat
        return adapter_for(shared.model, shared.tokenizer, name=name, chat=chat and chat_available(shared))
    prefix = (st.session_state.get(PREFIX_KEY, "") or "") if prefix is None else prefix
    return adapter_for(shared.model, shared.tokenizer, name=name, prefix=prefix)


@speaker_only
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


def hf_loader(active: ActiveModel | None = None) -> None:
    """The sidebar's "Hugging Face model" field: a local folder or a hub id, an optional source prefix, and "Format
    as chat" when the current model (`active`) is a causal language model with a chat template."""
    with st.expander("Hugging Face model", icon=":material/hub:"):
        by_name = not refuse("load")  # the audience keeps the current model's options, not loading by name
        if by_name:
            st.text_input("Folder or hub id", key=NAME_KEY, placeholder="Helsinki-NLP/opus-mt-en-de",
                          help=f"A save_pretrained folder or a hub id (safetensors only, no custom code). Folders in "
                               f"{hf_models_root()} are listed in the picker.")
        st.text_input("Source prefix", key=PREFIX_KEY, placeholder="translate English to German: ",
                      help="Prepended to every input of an encoder-decoder (T5 task prefixes).")
        if active is not None and chat_available(active.adapter):
            st.toggle("Format as chat", key=CHAT_KEY,
                      help="The prompt goes through the tokenizer's chat template (one user turn, then the "
                           "assistant's opening); the template's tokens are shown as tokens.")
        if by_name:
            st.button("Load", key="sidebar_hf_load", on_click=_on_load, icon=":material/download:")
        message = st.session_state.pop(MESSAGE_KEY, None)
        if message is not None:
            (st.error if message[0] == "error" else st.success)(message[1])
