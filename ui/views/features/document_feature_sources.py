"""A document's row one level down in dictionary features (docs/dictionaries.md): which sources, through which heads,
wrote a feature of an attention-output dictionary at the page's row, read as the document was decoded, through the
attention store (`text_feature_sources`: one fused forward keeping the store and the stream entering the layer, no
n x n map). Offered under the document views of Decode and Attention, for this model's attention-output dictionaries
(the checkpoints' and those the app trained)."""
from __future__ import annotations

from typing import Callable

import streamlit as st

from transformer.decode import InputError
from transformer.dictionaries import Dictionary, DictionaryError, TextSources, place, text_feature_sources
from ui.models import ActiveModel
from ui.server import text_hash

from ..kit import JobTexts, Selection, analysis_result, can_start, model_dictionaries, show_text_sources, start_button

KEY = "document_feature_sources"


def _readable(model: ActiveModel, dictionary: Dictionary) -> bool:
    """Whether the dictionary is on an attention output of the decoder-only model's one stack."""
    try:
        where = place(dictionary.site, model.adapter)
        dictionary.check_width(where.width, model.adapter.name)
    except DictionaryError:
        return False
    return where.kind is not None


def show_document_feature_sources(sel: Selection) -> None:
    """The expander: a dictionary and a feature picked, the feature at the page's row taken apart over the sources."""
    with st.expander("Which sources wrote a dictionary feature at this row", key=f"{KEY}_open", on_change="rerun",
                     icon=":material/category:") as box:
        if not box.open:
            return
        if not sel.model.family.prompt_in_decoder:
            st.caption("A document's rows are taken apart into dictionary features on decoder-only models (the "
                       "Features page takes any model's text).")
            return
        found = {n: d for n, d in model_dictionaries(sel.model).items() if _readable(sel.model, d)}
        if not found:
            st.info(f"No dictionary of an attention output of {sel.model.option.name} yet: train one on the Features "
                    "page, or `python -m transformer dictionary train MODEL --site attn:self:L<l> --features N --out "
                    "DIR` into the checkpoints' `dictionaries/` folder.", icon=":material/info:")
            return
        c_dict, c_feature = st.columns([3, 1])
        name = c_dict.selectbox("Dictionary", list(found), key=f"{KEY}_dict",
                                format_func=lambda n: f"{n} · {found[n].site.label} · {found[n].n_features:,} features")
        dictionary = found[name]
        feature = int(c_feature.number_input(f"Feature (0–{dictionary.n_features - 1})", 0,
                                             dictionary.n_features - 1, 0, key=f"{KEY}_feature"))
        rows = len(sel.result.trace.decoder_input_tokens)
        row = sel.row if sel.row is not None else rows - 1
        fed = [s.token_id for s in sel.result.steps[:-1]]  # the decode's own steps after the prompt: every row
        identity = ("document-feature-sources", sel.model.cache_key, text_hash(sel.text), len(fed), name, feature,
                    row)

        def run(progress: Callable[[float], None]) -> TextSources:
            return text_feature_sources(sel.model.adapter, dictionary, sel.text, feature, query=row, continuation=fed)

        result = analysis_result(identity, f"Reading feature #{feature}'s sources at row {row:,}", run, key=KEY,
                                 texts=JobTexts(refusals=(DictionaryError, InputError)))
        if result is None:
            if can_start(identity):
                start_button(f"Take feature #{feature} apart at row {row:,}", identity, key=KEY,
                             icon=":material/play_arrow:")
            return
        show_text_sources(result, KEY, picked=True)
