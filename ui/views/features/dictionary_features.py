"""A dictionary's features in the app (docs/dictionaries.md): the dictionaries trained on the model shown (shipped in
the checkpoints' `dictionaries/` folder, or trained here), a finder over one's features (frequency, activation, top
tokens) and a page per feature, as the head page: its strongest activations by decile with the token highlighted,
the tokens it promotes through the unembedding, the heads whose queries or keys read it most. A dictionary without
a training report says so: nothing untrained is shown as if it were trained."""
from __future__ import annotations

import functools
import zlib
from typing import Callable

import pandas as pd
import streamlit as st

from transformer.charts import decile_chart, feature_sources_chart, visible_token
from transformer.decode import STORE_ABOVE, InputError
from transformer.dictionaries import (
    Dictionary,
    DictionaryError,
    Example,
    FeatureCorpus,
    TextSources,
    decile_counts,
    decile_examples,
    example_sources,
    feature_corpus,
    place,
    promoted_tokens,
    reading_heads,
    text_feature_sources,
    top_examples,
)
from ui.models import ActiveModel

from ..kit import (
    LINK_PARAMS,
    PAGE_TEXTS,
    JobTexts,
    analysis_result,
    can_start,
    md,
    model_texts,
    show_chart,
    show_text_sources,
    start_button,
)

KEYS = LINK_PARAMS["dictionary"]
KEY = "dictionary_features"
FINDER_ROWS = 12


def pick_dictionary(active: ActiveModel, found: dict[str, Dictionary]) -> tuple[str, Dictionary] | None:
    """The dictionary picker (the link's `dict`) and the picked dictionary's report line."""
    if not found:
        st.info(f"No dictionary trained on {active.option.name} yet: train one here (beside), or with `python -m "
                "transformer dictionary train` into the checkpoints' `dictionaries/` folder.", icon=":material/info:")
        return None
    if st.session_state.get(KEYS["dict"]) not in found:
        st.session_state[KEYS["dict"]] = next(iter(found))
    name = st.selectbox("Dictionary", list(found), key=KEYS["dict"],
                        format_func=lambda n: f"{n} · {found[n].site.label} · {found[n].n_features:,} features")
    dictionary = found[name]
    if dictionary.trained:
        m = dictionary.metrics
        st.caption(f"{dictionary.activation} {f'k {dictionary.k}, ' if dictionary.k else ''}explained variance "
                   f"{m['explained_variance']:.3f}, L0 {m.get('l0', float('nan')):.1f}, dead "
                   f"{int(m.get('dead_features', 0))} of {dictionary.n_features:,}.")
    else:
        st.warning("This dictionary has no training report: it is untrained (or its report was lost), so its "
                   "features are not learned from this model and mean nothing yet.", icon=":material/warning:")
    return name, dictionary


def _corpus(active: ActiveModel, name: str, dictionary: Dictionary) -> FeatureCorpus | None:
    """The dictionary's features over the model's texts (a background job, started by its button)."""
    texts = model_texts(active, PAGE_TEXTS, examples_first=True)
    if texts is None:
        st.info("This model has no texts of its own to read the features over (a Hugging Face model): read them with "
                "the library (`feature_corpus`).", icon=":material/info:")
        return None
    identity = ("dictionary-features", active.cache_key, name, dictionary.n_features, texts.described)

    def run(progress) -> FeatureCorpus:
        return feature_corpus(active.adapter, dictionary, texts.texts, texts.references, texts.described,
                              progress=lambda done, total: progress(done / total))

    result = analysis_result(identity, f"Reading {dictionary.n_features:,} features over {texts.described}", run,
                             key=KEY, texts=JobTexts(refusals=(DictionaryError,)))
    if result is None and can_start(identity):
        start_button(f"Read the features over {texts.described}", identity, key=KEY, icon=":material/play_arrow:")
    return result


def _pick_row(table: str) -> None:
    rows = st.session_state[table].selection.rows
    frame = st.session_state.get(f"{KEY}_finder_frame")
    if rows and frame is not None:
        st.session_state[KEYS["feature"]] = int(frame.iloc[rows[0]]["feature"])


def show_finder(corpus: FeatureCorpus) -> None:
    """The finder: every live feature by frequency, filtered by a top token; a row picked opens its page."""
    c_filter, c_order = st.columns([2, 1])
    token = c_filter.text_input("Top token contains", key=f"{KEY}_token", placeholder="e.g. a letter or a word")
    order = c_order.selectbox("Order by", ["frequency", "max_activation", "mean_activation"], key=f"{KEY}_order")
    frame = corpus.frame[corpus.frame["frequency"] > 0]
    if token:
        frame = frame[frame["top_tokens"].str.contains(token, regex=False)]
    frame = frame.sort_values(order, ascending=False).reset_index(drop=True)
    st.session_state[f"{KEY}_finder_frame"] = frame
    dead = int((corpus.frame["frequency"] == 0).sum())
    st.caption(f"{len(frame):,} features shown ({dead:,} never fire over {corpus.described}); pick a row to open it.")
    table = f"{KEY}_finder_{zlib.crc32(f'{token}|{order}'.encode())}"  # a new filter or order: no row picked yet
    st.dataframe(frame, hide_index=True, key=table, on_select=functools.partial(_pick_row, table),
                 selection_mode="single-row",
                 height=36 + 35 * min(FINDER_ROWS, max(len(frame), 1)), column_config={
                     "frequency": st.column_config.NumberColumn(format="%.4f"),
                     "max_activation": st.column_config.NumberColumn("max activation", format="%.2f"),
                     "mean_activation": st.column_config.NumberColumn("mean activation", format="%.2f"),
                     "top_tokens": "top tokens"})


def _example_line(corpus: FeatureCorpus, example: Example) -> str:
    before, token, after = corpus.context(example)
    text = lambda toks: " ".join(md(visible_token(t)) for t in toks)  # noqa: E731
    return (f"`{example.activation:6.2f}` {text(before)} :orange-background[**{md(visible_token(token))}**] "
            f"{text(after)}")


def _show_sources(active: ActiveModel, name: str, dictionary: Dictionary, corpus: FeatureCorpus, feature: int
                  ) -> None:
    """An attention-output feature's strongest activation taken apart over the sources that wrote it."""
    top = top_examples(corpus.codes, corpus.activations, feature, 1)
    if not top:
        return
    try:
        sources, tokens = example_sources(active.adapter, dictionary, corpus, feature, top[0])
    except DictionaryError as exc:
        st.caption(str(exc))
        return
    st.markdown("**Which sources wrote it** at its strongest activation (direct feature attribution: each source "
                "position's share of the pre-activation, summed over heads)")
    show_chart(feature_sources_chart(sources, [visible_token(t) for t in tokens]), key=f"{KEY}_sources",
               width="content")
    heads = ", ".join(f"H{h + 1} {v:+.2f}" for h, v in enumerate(sources.by_head()))
    st.caption(f"By head: {heads}; a constant no source writes {sources.constant:+.2f}; pre-activation "
               f"{sources.pre_activation:.2f}, activation {sources.activation:.2f}.")
    _show_text_sources(active, name, dictionary, feature)


def _show_text_sources(active: ActiveModel, name: str, dictionary: Dictionary, feature: int) -> None:
    """Which sources wrote the feature over a text of the user's, at its strongest position there (a decoder-only
    model's document past the maps' threshold read through the attention store, no n x n map)."""
    text = st.text_area("Which sources wrote it over a text of yours", key=f"{KEY}_sources_text", height=80,
                        placeholder="Paste a sentence or a whole document",
                        help=f"A decoder-only model's document past {STORE_ABOVE:,} tokens is read through the "
                        "attention store (the query's row recomputed, no n × n map), as long documents are decoded.")
    if not text.strip():
        return
    identity = ("feature-text-sources", active.cache_key, name, dictionary.n_features, feature, text)

    def run(progress: Callable[[float], None]) -> TextSources:
        return text_feature_sources(active.adapter, dictionary, text, feature)

    found = analysis_result(identity, f"Reading feature #{feature}'s sources over your text", run,
                            key=f"{KEY}_text", texts=JobTexts(refusals=(DictionaryError, InputError)))
    if found is None:
        if can_start(identity):
            start_button("Which sources wrote it here", identity, key=f"{KEY}_text", icon=":material/play_arrow:")
        return
    show_text_sources(found, f"{KEY}_text")


def show_feature(active: ActiveModel, name: str, dictionary: Dictionary, corpus: FeatureCorpus) -> None:
    """One feature's page: the feature picked (the link's `feature`, 0-based as the dictionary's rows)."""
    state = st.session_state
    if not isinstance(state.get(KEYS["feature"]), int) or not 0 <= state[KEYS["feature"]] < dictionary.n_features:
        live = corpus.frame.sort_values("frequency", ascending=False)
        state[KEYS["feature"]] = int(live["feature"].iloc[0])
    feature = int(st.number_input(f"Feature (0–{dictionary.n_features - 1})", 0, dictionary.n_features - 1,
                                  key=KEYS["feature"]))
    row = corpus.frame.iloc[feature]
    st.subheader(f"Feature #{feature}", anchor=False)
    if row["frequency"] == 0:
        st.info(f"Feature #{feature} never fires over {corpus.described}.", icon=":material/info:")
        return
    st.caption(f"Fires on {100 * row['frequency']:.2f} % of {len(corpus.activations):,} tokens of "
               f"{corpus.described}; largest activation {row['max_activation']:.2f}, mean where it fires "
               f"{row['mean_activation']:.2f}.")
    where = place(dictionary.site, active.adapter)
    c_examples, c_side = st.columns([3, 2])
    with c_examples:
        st.markdown("**Strongest activations, by decile of its range** (the token highlighted)")
        for decile, examples in decile_examples(corpus.codes, corpus.activations, feature).items():
            st.markdown(f"*decile {decile + 1} of 10*  \n" + "  \n".join(_example_line(corpus, e) for e in examples))
    with c_side:
        show_chart(decile_chart(decile_counts(corpus.codes, feature), feature), key=f"{KEY}_deciles",
                   width="content")
        promoted = promoted_tokens(active.adapter, where, dictionary, feature)
        if promoted is None:
            st.caption("Its site is not read by the output head (an encoder's): no tokens promoted.")
        else:
            st.markdown("**Tokens it promotes** through the unembedding")
            st.dataframe(pd.DataFrame([(visible_token(t), v) for t, v in promoted], columns=["token", "logit rise"]),
                         hide_index=True, key=f"{KEY}_promoted",
                         column_config={"logit rise": st.column_config.NumberColumn(format="%+.3f")})
        st.markdown("**Heads that read it most** (|W_Q N d|, |W_K N d|)")
        st.dataframe(reading_heads(active.adapter, where, dictionary, feature).head(8), hide_index=True,
                     key=f"{KEY}_readers", column_config={"query": st.column_config.NumberColumn(format="%.2f"),
                                                          "key": st.column_config.NumberColumn(format="%.2f")})
    if where.kind is not None:
        _show_sources(active, name, dictionary, corpus, feature)


def show_dictionary_features(active: ActiveModel, name: str, dictionary: Dictionary) -> None:
    """The finder and the feature's page of the picked dictionary (its features read over the model's texts first)."""
    try:
        place(dictionary.site, active.adapter)
        corpus = _corpus(active, name, dictionary)
    except DictionaryError as exc:
        st.warning(str(exc), icon=":material/error:")
        return
    if corpus is None:
        return
    with st.expander("Find a feature", expanded=True, icon=":material/search:"):
        show_finder(corpus)
    show_feature(active, name, dictionary, corpus)
