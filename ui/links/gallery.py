"""Example links for the Home page: one per shipped model, as ordinary links (the same URLs a user can make)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui.models import SHIPPED, model_options, shared_model
from ui.server import page_named
from ui.views import default_text, read_ahead_greedy

from .link_format import to_params
from .read_ahead import link_decodes, read_ahead

TOY_MODEL = f"{SHIPPED}:toy-en-de"  # Home's button opens it: the model whose gold alignment is perfect


@dataclass(frozen=True)
class ExampleLink:
    """A link to what one shipped model is known for, worth opening first."""

    checkpoint: str  # shipped checkpoint folder name
    label: str
    caption: str
    page: str  # pages/<page>.py
    values: dict[str, Any]

    def params(self) -> dict[str, str]:
        """The link's query parameters."""
        return to_params({"model": f"{SHIPPED}:{self.checkpoint}", **self.values})


EXAMPLE_LINKS = (
    ExampleLink("reverse", "The anti-diagonal of reversal",
              "Cross-attention of head 4 reads the source right to left.", "attention",
              {"text": "attentionisall", "mode": "greedy", "kind": "cross", "layer": 0, "head": 3, "focus": "map"}),
    ExampleLink("sort", "The sorting head",
              "The one cross-attention head finds each next letter in alphabetical order.", "attention",
              {"text": "transformer", "mode": "greedy", "kind": "cross", "layer": 0, "head": 0, "focus": "map"}),
    ExampleLink("toy-en-de", "A word-alignment head",
              "Layer 2, head 2 of the toy translation model follows the gold word alignment.", "attention",
              {"text": "the old man sees a small dog", "mode": "greedy", "kind": "cross", "layer": 1, "head": 1,
               "focus": "map"}),
    ExampleLink("toy-en-de", "Translation step by step",
              "The verb moves: step through the German output and watch the source it reads.", "decode",
              {"text": "the clever woman reads a book", "step": 3, "layer": 1, "head": 1}),
)


def available_examples() -> list[ExampleLink]:
    """The example links whose shipped model is installed."""
    installed = {o.id for o in model_options()}
    return [e for e in EXAMPLE_LINKS if f"{SHIPPED}:{e.checkpoint}" in installed]


def warm_examples() -> int:
    """Load the models of Home's offers (the toy model's button, the example links) into the shared cache and decode
    what each first shows (the toy model's own input on Home, each link's input), so that the first click on one only
    draws; returns how many decodes ran. A model that is not installed or does not load is skipped."""
    done = sum(read_ahead(link_decodes(e.page, e.params())) for e in EXAMPLE_LINKS)
    toy = shared_model(TOY_MODEL)
    return done + int(toy is not None and read_ahead_greedy(toy, default_text(toy)))


def show_gallery() -> None:
    """The example links as page links, two to a row (four to a row cut their labels: "The anti-diagonal of reve")."""
    examples = available_examples()
    if not examples:
        return
    st.markdown("#### Start from an example")
    columns = st.columns(min(len(examples), 2))
    for i, example in enumerate(examples):
        with columns[i % len(columns)].container(border=True):
            st.page_link(page_named(example.page).path, label=f"**{example.label}** · {example.checkpoint}",
                         icon=":material/link:", query_params=example.params())
            st.caption(example.caption)
