"""What a model can read: when an input has unknown words, example inputs and the model's source vocabulary."""
from __future__ import annotations

import streamlit as st

from ui.models import ActiveModel

from .widgets import md, visible

MAX_EXAMPLES = 4


def known_words(active: ActiveModel) -> list[str]:
    """The model's source vocabulary without the special tokens, sorted (none for a Hugging Face model)."""
    tokenizer = active.src_tokenizer
    if tokenizer is None:
        return []
    return sorted(tokenizer.tokens[tokenizer.unk_id + 1:])  # ids 0..unk_id are the special tokens


def show_vocabulary_hint(active: ActiveModel) -> None:
    """Inputs the model knows (its task's examples) and, in an expander, every word it can read."""
    examples = [source for source, _ in active.examples if source.strip()][:MAX_EXAMPLES]
    if examples:
        st.caption("Inputs this model knows: " + " · ".join(f"*{md(e)}*" for e in examples))
    words = known_words(active)
    if not words:  # a Hugging Face model: subword pieces, no word list to show
        return
    unit = {"word": "words", "char": "characters"}.get(active.level, "tokens (words and pieces of words)")
    with st.expander(f"The {len(words):,} {unit} this model knows", icon=":material/dictionary:"):
        st.markdown(" · ".join(md(visible(w)) for w in words))
