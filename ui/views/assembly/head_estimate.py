"""A head's one-pass ablation estimate on its page: the number the head finder (Find heads, on the Attention page)
has for the head, under the finder's name and definition, with what it is over; n/a and why where the finder has
none (not estimated yet, over other sentences, or an encoder-only model)."""
from __future__ import annotations

import streamlit as st

from transformer.analysis import FINDER_COLUMNS, CorpusStats, HeadEstimate, head_estimate
from transformer.model import Head
from ui.models import ActiveModel

from ..features import latest_corpus, latest_estimate

NOT_ESTIMATED = ("not estimated yet: \"Estimate each head's effect over the first N sentences\" under Find heads on "
                 "the Attention page")


def _why(active: ActiveModel, kept: tuple | None) -> str:
    """Why the finder has no estimate for this model and these statistics' sentences."""
    if not active.family.decodes:
        return "an encoder-only model writes no output to estimate against"
    if kept is not None and kept[0] == active.cache_key and kept[3] is not None:
        return f"the finder's estimate is over other sentences than these statistics'; {NOT_ESTIMATED}"
    return NOT_ESTIMATED


def _same_sentences(kept: tuple, corpus: tuple | None) -> bool:
    """Whether the finder's first sentences (and references) are the first of the statistics' sentences."""
    if corpus is None:
        return False
    (_, first, first_refs, _), (sources, refs) = kept, corpus
    if (first_refs is None) != (refs is None):
        return False
    return tuple(sources[:len(first)]) == tuple(first) and (refs is None or tuple(refs[:len(first)]) == first_refs)


def page_estimate(active: ActiveModel, stats: CorpusStats, head: Head) -> HeadEstimate:
    """The head's estimate as the finder last drew it for this model, when it was over these statistics' first
    sentences (the finder's own identity); else n/a and why."""
    kept = latest_estimate()
    usable = (kept is not None and kept[0] == active.cache_key and kept[3] is not None
              and _same_sentences(kept, latest_corpus(active)))
    return head_estimate(stats, head, kept[3] if usable and kept is not None else None, _why(active, kept))


def show_estimate(estimate: HeadEstimate) -> None:
    """The number under the finder's name (its definition as help) and, beside it, what it is over or why n/a."""
    c_value, c_note = st.columns([1, 5], vertical_alignment="center")
    c_value.metric("estimate", estimate.shown, help=FINDER_COLUMNS["estimate"])
    if estimate.value is None:
        c_note.caption(f"The one-pass ablation estimate is n/a: {estimate.note}.")
    else:
        c_note.caption(f"The {FINDER_COLUMNS['estimate']}, as the head finder shows it: {estimate.note}.")
