"""A document as the input (decoder-only models whose context reads past the store's threshold): a multi-line box
that keeps line breaks or a text file (UTF-8 or .gz), its tokens against the model's own context, the estimated time
and memory confirmed by a button, the decode as a background job with the attention store (never the shared decode
queue, which pads a batch to its longest member); its map is `document_map`'s. The link carries the document's hash
(`doc=`), never its text."""
from __future__ import annotations

from typing import Any

import streamlit as st

from transformer.analysis import estimate_decode, free_memory
from transformer.data import DataError, text_from_bytes
from transformer.decode import STORE_ABOVE, DecodeResult, char_limit, greedy_decode, model_context
from ui.models import ActiveModel
from ui.server import DOC_PARAM, DOC_STATE_KEY, keep_text, kept_text, shared_cache, text_hash

from ..kit import LINK_PARAMS, JobTexts, analysis_result, can_start, start_button

ON_KEY, TEXT_KEY, UPLOAD_KEY = "long_doc_on", "long_doc_text", "long_doc_upload"
STEPS_KEY = LINK_PARAMS["decode"]["dsteps"]  # the document's decode steps, in its link
JOB_KEY, LINK_READ_KEY, UPLOADED_KEY = "long_doc_job", "long_doc_link_read", "long_doc_uploaded"


def reads_long(active: ActiveModel) -> bool:
    """Whether the model takes a document: decoder-only, its own context past the store's threshold."""
    return active.family.prompt_in_decoder and model_context(active.adapter) > STORE_ABOVE


def _read_link() -> None:
    digest = st.query_params.get(DOC_PARAM)
    if not digest or st.session_state.get(LINK_READ_KEY) == digest:
        return
    st.session_state[LINK_READ_KEY] = digest
    text = kept_text(digest)
    if text is None:
        st.info("The document this link names is not kept on this server (it was cleared, or the link is from "
                "another one): paste or upload it again.", icon=":material/link_off:")
        return
    st.session_state[TEXT_KEY], st.session_state[ON_KEY] = text, True


def _read_upload() -> None:
    upload = st.session_state.get(UPLOAD_KEY)
    if upload is None or st.session_state.get(UPLOADED_KEY) == upload.file_id:
        return
    st.session_state[UPLOADED_KEY] = upload.file_id
    try:
        st.session_state[TEXT_KEY] = text_from_bytes(upload.getvalue(), upload.name)
    except DataError as exc:
        st.session_state[UPLOADED_KEY + "_error"] = str(exc)


def show_long_input(active: ActiveModel) -> tuple[DecodeResult, tuple] | None:
    """The document switch and, when on, its box, file, estimate and job; the decode once it is done, with its
    identity (under which its summaries are shared)."""
    st.session_state.pop(DOC_STATE_KEY, None)  # in the link only while a document's decode is shown
    if not reads_long(active):
        return None
    _read_link()
    adapter, context = active.adapter, model_context(active.adapter)
    if not st.toggle("Expand to a document", key=ON_KEY, help=f"A long input (up to {active.option.name}'s own "
                     f"context, {context:,} tokens): pasted with its line breaks or read from a text file."):
        return None
    st.file_uploader("Text file (UTF-8 or .gz)", key=UPLOAD_KEY, on_change=_read_upload)
    error = st.session_state.pop(UPLOADED_KEY + "_error", None)
    if error:
        st.error(error, icon=":material/description:")
    text = st.text_area("Document", key=TEXT_KEY, height=180, placeholder="Paste a document, a chat or code here")
    if not text.strip():
        return None
    if len(text) > char_limit(adapter):
        st.error(f"The document has {len(text):,} characters; {active.option.name} reads at most {context:,} tokens "
                 f"(its own context), so at most {char_limit(adapter):,} characters.", icon=":material/straighten:")
        return None
    n = len(adapter.decoder_prefix(adapter.tokenize_source(text)))
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
    identity = ("long-decode", active.cache_key, text_hash(text), steps)
    st.caption(f"{n:,} tokens of the model's {context:,}. Estimated: about {max(seconds, 1):,.0f} s and "
               f"{memory / 2**20:,.0f} MB (the attention store {store / 2**20:,.1f} MB; no n × n map is kept).")
    if identity not in shared_cache() and can_start(identity):  # kept already: no decode to start
        start_button(f"Decode the document (about {max(seconds, 1):,.0f} s, {memory / 2**20:,.0f} MB)", identity,
                     key=JOB_KEY, icon=":material/play_arrow:")

    def run(progress: Any) -> DecodeResult:
        progress(0.0)
        return shared_cache().get(identity, lambda: greedy_decode(adapter, text, max_steps=steps, residuals=True))

    if identity in shared_cache():  # decoded already (another session, a link): no job to wait for
        result = shared_cache().get(identity, lambda: greedy_decode(adapter, text, max_steps=steps, residuals=True))
    else:
        result = analysis_result(identity, f"Decoding {n:,} tokens", run, key=JOB_KEY, texts=JobTexts())
    if result is None:
        return None
    digest = st.session_state[DOC_STATE_KEY] = keep_text(text)
    st.success(f"**{result.output_text.strip() or '(no text)'}** after {n:,} tokens.", icon=":material/done:")
    st.caption(f"The page's link names this document as `{DOC_PARAM}={digest}`: the text stays on this server, "
               "the link carries its hash and the view.")
    return result, identity
