"""The Decode and Attention pages' input for a model that reads documents (decoder-only, its own context past the
store's threshold): the page's own box, multi-line (line breaks kept), and a text file (UTF-8 or .gz) that fills it.
The input's length decides what its decode keeps (`keep="auto"`): a short input the maps, as everywhere, a document
the attention store, decoded as a background job after its time and memory estimate, and picked (layer, head, a query
row) into the page's own Selection. The link names a document by its hash (`doc=`), never its text. What needs
whole maps is refused here, in one place, with a window of the document offered as the page's input."""
from __future__ import annotations

from typing import Any

import streamlit as st

from transformer.analysis import WINDOW_TOKENS, attention_source, estimate_decode, free_memory, refused_features
from transformer.data import DataError, text_from_bytes
from transformer.decode import (
    GROUPINGS,
    MAX_INPUT_CHARS,
    STORE_ABOVE,
    DecodeResult,
    char_limit,
    greedy_decode,
    keeps_store,
    model_context,
)
from ui.models import ActiveModel
from ui.server import DOC_PARAM, DOC_STATE_KEY, keep_text, kept_text, shared_cache, text_hash

from .background import JobTexts, analysis_result, can_start, start_button
from .inference import TEXT_KEY, share_text
from .link_params import LINK_PARAMS
from .selection import Selection
from .text_box import model_text_input

STEPS_KEY = LINK_PARAMS["decode"]["dsteps"]  # the document's decode steps, in its link (both pages: one key)
JOB_KEY, LINK_READ_KEY = "document_job", "document_link_read"
UPLOADED_KEY = "document_uploaded"  # the upload last read into the box (read once)
BOX_PX = 68  # the box's height: two lines, so the page's first screen keeps its map
GROUP_NAMES = {"token": "tokens", "word": "words", "sentence": "sentences", "line": "lines", "turn": "chat turns"}


def reads_documents(active: ActiveModel) -> bool:
    """Whether the model takes a document: decoder-only, its own context past the store's threshold."""
    return active.family.prompt_in_decoder and model_context(active.adapter) > STORE_ABOVE


def holds_maps(sel: Selection) -> bool:
    """Whether the page's decode kept whole maps (a short input) rather than the attention store (a document)."""
    return attention_source(sel.result.trace).holds_maps


def _read_link(key: str) -> None:
    digest = st.query_params.get(DOC_PARAM)
    if not digest or st.session_state.get(LINK_READ_KEY) == digest:
        return
    st.session_state[LINK_READ_KEY] = digest
    text = kept_text(digest)
    if text is None:
        st.info("The document this link names is not kept on this server (it was cleared, or the link is from "
                "another one): paste or upload it again.", icon=":material/link_off:")
        return
    st.session_state[key] = st.session_state[TEXT_KEY] = text


def _read_upload(upload_key: str, key: str, popover_key: str) -> None:
    """The uploaded file into the box; once read, its popover closes (open, it covered the page's decode button)."""
    upload = st.session_state.get(upload_key)
    if upload is None or st.session_state.get(UPLOADED_KEY) == upload.file_id:
        return
    st.session_state[UPLOADED_KEY] = upload.file_id
    try:
        st.session_state[key] = st.session_state[TEXT_KEY] = text_from_bytes(upload.getvalue(), upload.name)
    except DataError as exc:
        st.session_state[UPLOADED_KEY + "_error"] = str(exc)
        return
    st.session_state[popover_key] = False


def page_text(where: Any, active: ActiveModel, page: str) -> str:
    """The page's text box (`where`: its column): one line for most models; for a model that reads documents a
    multi-line box up to its own context and a text file under it (in a popover: one short row), both filling the
    page's one input."""
    key, label = LINK_PARAMS[page]["text"], active.family.input_role.capitalize()
    st.session_state.pop(DOC_STATE_KEY, None)  # in the link only while a document's decode is shown
    if not reads_documents(active):
        return model_text_input(where, label, key=key, on_change=share_text, args=(key,))
    _read_link(key)
    text = model_text_input(where, label, key=key, on_change=share_text, args=(key,), multiline=True,
                            limit=char_limit(active.adapter), height=BOX_PX,
                            placeholder="A sentence, or paste a document, a chat or code",
                            help=f"Up to {model_context(active.adapter):,} tokens ({active.option.name}'s own "
                                 f"context), line breaks kept. Past {STORE_ABOVE:,} tokens the input is a document: "
                                 "decoded with the attention store (no n × n map), after an estimate.")
    upload_key, popover_key = f"{page}_text_file", f"{page}_text_upload"
    with where.popover("Text file", icon=":material/upload_file:", type="tertiary", key=popover_key,
                       on_change="rerun",  # its state is kept, so a read file can close it
                       help="A text file (UTF-8 or .gz) read into the box, line breaks kept"):  # one short row
        st.file_uploader("Text file (UTF-8 or .gz)", key=upload_key, on_change=_read_upload,
                         args=(upload_key, key, popover_key))
    error = st.session_state.pop(UPLOADED_KEY + "_error", None)
    if error:
        where.error(error, icon=":material/description:")
    return text


def document_tokens(active: ActiveModel, text: str) -> int | None:
    """The input's tokens when its decode keeps the attention store (a document), else None (the page's own
    decode, with maps)."""
    adapter = active.adapter
    if not reads_documents(active) or not text.strip():
        return None
    n = len(adapter.decoder_prefix(adapter.tokenize_source(text)))
    return n if keeps_store(adapter, n) else None


def _decode(active: ActiveModel, text: str, n: int) -> DecodeResult | None:
    """The document's steps, its estimate confirmed by a button, the decode as a background job (never the shared
    decode queue, which pads a batch to its longest member); the decode once done, None before."""
    adapter, context = active.adapter, model_context(active.adapter)
    st.session_state.setdefault(STEPS_KEY, 8)  # a link's `dsteps` restores it (the widget takes no default then)
    steps = int(st.number_input("Steps to decode", 1, 64, key=STEPS_KEY))
    if n + steps > context:
        st.error(f"The document has {n:,} tokens and {steps} steps; {active.option.name} reads at most "
                 f"{context:,} tokens (its own context).", icon=":material/straighten:")
        return None
    seconds, memory, store = estimate_decode(adapter, n, steps)
    if memory > free_memory():
        st.error(f"Decoding {n:,} tokens needs about {memory / 2**20:,.0f} MB; the machine has "
                 f"{free_memory() / 2**20:,.0f} MB free. Shorten the document.", icon=":material/memory:")
        return None
    identity = ("document-decode", active.cache_key, text_hash(text), steps)
    st.caption(f"A document: {n:,} tokens of the model's {context:,}. Estimated: about {max(seconds, 1):,.0f} s and "
               f"{memory / 2**20:,.0f} MB (the attention store {store / 2**20:,.1f} MB; no n × n map is kept).")

    def decode() -> DecodeResult:
        return greedy_decode(adapter, text, max_steps=steps, residuals=True, keep="auto")

    if identity in shared_cache():  # decoded already (another session, a link): no job to wait for
        return shared_cache().get(identity, decode)
    if can_start(identity):
        start_button(f"Decode the document (about {max(seconds, 1):,.0f} s, {memory / 2**20:,.0f} MB)", identity,
                     key=JOB_KEY, icon=":material/play_arrow:")

    def run(progress: Any) -> DecodeResult:
        progress(0.0)
        return shared_cache().get(identity, decode)

    return analysis_result(identity, f"Decoding {n:,} tokens", run, key=JOB_KEY, texts=JobTexts())


def document_selection(page: str, active: ActiveModel, text: str, n: int) -> Selection | None:
    """A document's decode (a background job) and the page's pickers for it (layer, head, a query row, the grouping
    of tokens) as the page's Selection; None while there is nothing to show."""
    result = _decode(active, text, n)
    if result is None:
        return None
    digest = st.session_state[DOC_STATE_KEY] = keep_text(text)
    st.success(f"**{result.output_text.strip() or '(no text)'}** after {n:,} tokens.", icon=":material/done:")
    st.caption(f"The page's link names this document as `{DOC_PARAM}={digest}`: the text stays on this server, "
               "the link carries its hash and the view.")
    n_layers, n_heads, rows, _ = attention_source(result.trace).shape("self")
    keys = LINK_PARAMS[page]
    c_layer, c_head, c_row, c_group = st.columns(4, vertical_alignment="bottom")
    if st.session_state.get(keys["layer"]) not in range(n_layers):
        st.session_state[keys["layer"]] = 0
    layer = c_layer.selectbox("Layer", list(range(n_layers)), format_func=lambda i: f"Layer {i + 1}",
                              key=keys["layer"])
    if st.session_state.get(keys["head"]) not in range(n_heads):  # one head: a document has no mean of heads
        st.session_state[keys["head"]] = 0
    head = c_head.selectbox("Head", list(range(n_heads)), format_func=lambda h: f"Head {h + 1}", key=keys["head"])
    row_key = f"{page}_document_row"
    if not isinstance(st.session_state.get(row_key), int) or not 0 <= st.session_state[row_key] < rows:
        st.session_state[row_key] = rows - 1
    row = int(c_row.number_input("A query's row", 0, rows - 1, key=row_key,
                                 help="The row the views below read: its strip, its groups, Inside one head."))
    group: Any = c_group.selectbox("Group tokens into", list(GROUPINGS), key=keys["group"],
                                   format_func=lambda g: GROUP_NAMES.get(g, g),
                                   help="Tokens: as the tokenizer cut them. A row's weight on a group is the sum of "
                                        "its tokens' weights (the row still sums to 1); where two models cut the "
                                        "text apart, their rows are compared by group.")
    return Selection(page, active, text, result, kind="self", layer=int(layer), head=int(head), row=row,
                     group=str(group or "token"))


def window_text(active: ActiveModel, labels: list[str], query: int) -> tuple[str, int, int]:
    """The text of the WINDOW_TOKENS tokens of the document ending at row `query` (at most MAX_INPUT_CHARS
    characters, its start cut), and the window's first and last token."""
    first = max(0, query + 1 - WINDOW_TOKENS)
    ids = [active.adapter.token_to_id(t) for t in labels[first: query + 1]]
    text = active.adapter.detokenize([i for i in ids if i is not None])
    return text[-MAX_INPUT_CHARS:].lstrip(), first, query


def _open_window(text: str, key: str) -> None:
    state = st.session_state
    state[TEXT_KEY] = state[key] = text  # the page's own input, read again (its link's text now)
    for page in ("decode", "attention"):
        if LINK_PARAMS[page]["text"] != key:
            state.pop(LINK_PARAMS[page]["text"], None)  # the other page's box takes the shared input again


def show_window_offer(sel: Selection) -> None:
    """The one refusal at a document's length: what needs every weight or an edited pass, named, with a window of
    the document (ending at the picked row) offered as the page's own input, where every view works."""
    result = sel.result
    labels = list(result.trace.decoder_input_tokens)
    row = sel.row if sel.row is not None else result.trace.step_offset
    text, first, last = window_text(sel.model, labels, min(row, result.trace.step_offset))  # the document's tokens
    refused = refused_features(attention_source(result.trace))
    st.caption("Not drawn at this length (each reads every weight, or many passes of an edited document): "
               + ", ".join(refused) + ". A window of the document opens as the page's own input, where they and the "
               "views above work with every weight.")
    st.button(f"Open tokens {first:,}–{last:,} as the page's input ({last - first + 1:,} tokens)",
              key=sel.key("window_open"), icon=":material/crop:", on_click=_open_window,
              args=(text, sel.param_key("text")))
