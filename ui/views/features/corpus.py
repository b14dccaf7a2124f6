"""Head statistics over a corpus in the app (docs/corpus-statistics.md): the model's own validation sentences or an
uploaded file, computed off the script thread (progress, time left, Cancel), drawn as a table that sorts by any
statistic and each kind's heads clustered by the Jensen-Shannon divergence of their attention."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from transformer.analysis import CORPUS_STATISTICS, CorpusStats, corpus_statistics, snapshot_curves
from transformer.charts import js_cluster_map, snapshot_curves_chart
from transformer.data import MAX_CORPUS_LINES, Corpus, CorpusError, read_corpus
from transformer.decode import ALL_TITLES
from transformer.model import Head
from transformer.store import list_snapshots, open_model
from ui.models import ActiveModel

from ..kit import analysis_result, can_start, keep_snapshot_curves, md, show_chart, start_button

LATEST_KEY = "corpus_latest"  # (model cache key, CorpusStats): the statistics the head overview may be coloured by
LATEST_CORPUS_KEY = "corpus_latest_sentences"  # (model cache key, sources, references or None): what they read


def latest_corpus_statistics(active: ActiveModel) -> CorpusStats | None:
    """The corpus statistics last computed in this session for this model (None before any)."""
    latest = st.session_state.get(LATEST_KEY)
    return latest[1] if latest is not None and latest[0] == active.cache_key else None


def latest_corpus(active: ActiveModel) -> tuple[tuple[str, ...], tuple[str, ...] | None] | None:
    """The sentences (and the references, when teacher-forced) those statistics read; None before any."""
    latest = st.session_state.get(LATEST_CORPUS_KEY)
    return (latest[1], latest[2]) if latest is not None and latest[0] == active.cache_key else None


SOURCES = {"examples": "The model's validation sentences", "upload": "A file (one sentence a line; .gz, TSV)"}


def _corpus(active: ActiveModel, source: str, cap: int, key: str) -> Corpus | None:
    """The sentences the statistics read; None after a message (no file yet, a bad file)."""
    if source == "examples":
        pairs = [(s, r) for s, r in active.examples if s.strip()][:cap]
        if not pairs:
            st.info("This model has no validation sentences: upload a file.", icon=":material/upload_file:")
            return None
        refs = tuple(r for _, r in pairs) if all(r.strip() for _, r in pairs) else None
        return Corpus(tuple(s for s, _ in pairs), refs, "the model's validation set", len(pairs),
                      len(active.examples) > cap)
    upload = st.file_uploader("Corpus file", type=["txt", "gz", "tsv"], key=f"{key}_file")
    if upload is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(upload.name).name
        path.write_bytes(upload.getvalue())
        try:
            return read_corpus(path, cap=cap)
        except CorpusError as exc:
            st.warning(str(exc).replace(str(path), upload.name), icon=":material/edit_note:")
            return None


def _show(stats: CorpusStats, n_heads: dict[str, int], key: str, model: str) -> None:
    maps = {"reference": "the references", "greedy": "the model's own output"}.get(stats.mode, "one forward pass each")
    skipped = f" Skipped {len(stats.skipped)}: {stats.skipped[0]}" if stats.skipped else ""
    st.caption(f"{stats.sentences:,} sentences ({maps}); divergences over the first {stats.js_sentences:,}.{skipped}")
    st.session_state.setdefault(f"{key}_sort", "max_weight")
    by = st.selectbox("Sort by (largest first)", list(CORPUS_STATISTICS), key=f"{key}_sort", help="\n\n".join(
        f"**{name}**: {what}" for name, what in CORPUS_STATISTICS.items()))
    table = stats.ranked(by)
    shown = pd.DataFrame({"head": [Head(k, la, h).label for k, la, h in zip(table["kind"], table["layer"],
                                                                               table["head"], strict=True)],
                          "kind": [ALL_TITLES[k] for k in table["kind"]],
                          **{name: table[name] for name in CORPUS_STATISTICS}})
    st.dataframe(shown, hide_index=True, key=f"{key}_table", height=280, column_config={
        name: st.column_config.NumberColumn(name, format="%.3f", help=what)
        for name, what in CORPUS_STATISTICS.items()})
    _show_examples(stats, shown["head"].tolist(), key, model)
    kinds = list(stats.js)
    kind = st.radio("Clusters of", kinds, format_func=ALL_TITLES.__getitem__, key=f"{key}_kind", horizontal=True)
    show_chart(js_cluster_map(stats.js[kind], stats.clusters(kind), n_heads[kind]), width="content")


def _show_examples(stats: CorpusStats, labels: list[str], key: str, model: str) -> None:
    """The sentences where a head is most and least like its average (by its mean entropy), each a link that opens
    it on the Attention page at that head (with the model `model`, an option id)."""
    sources = st.session_state.get(f"{key}_sources") or ()
    label = st.selectbox("Examples of head", labels, key=f"{key}_example_head",
                         help="The sentences where this head's mean entropy is nearest its corpus average, and "
                              "furthest from it.")
    if not label or not sources:
        return
    h = Head.parse(label)
    most, least = stats.examples(h.kind, h.layer, h.head)

    def link(i: int) -> str:
        query = urlencode({"model": model, "text": sources[i], "kind": h.kind, "layer": h.layer + 1,
                           "head": h.head + 1})
        return f"- [{md(sources[i])}](/attention?{query})"

    page = urlencode({"model": model, "kind": h.kind, "layer": h.layer + 1, "head": h.head + 1})
    st.markdown(f"[{h.label} over the whole corpus: its page](/head?{page})")
    c_most, c_least = st.columns(2)
    c_most.markdown("**Most like its average**\n\n" + "\n".join(link(i) for i in most if i < len(sources)))
    c_least.markdown("**Least like its average**\n\n" + "\n".join(link(i) for i in least if i < len(sources)))


def show_corpus_statistics(active: ActiveModel, *, key: str) -> None:
    """'Head statistics over a corpus': pick the sentences, compute in the background, show the table and clusters."""
    st.caption("Per head, averaged over every query row of every sentence: entropy, confidence (the largest weight), "
               "attention to the first token, to special tokens and punctuation, to the same, previous and next "
               "position (Clark et al. 2019; Voita et al. 2019); heads clustered by the Jensen-Shannon divergence of "
               "their attention.")
    c_source, c_cap = st.columns([3, 1])
    st.session_state.setdefault(f"{key}_source", "examples")
    source = c_source.radio("Sentences", list(SOURCES), format_func=SOURCES.__getitem__, key=f"{key}_source",
                            horizontal=True)
    st.session_state.setdefault(f"{key}_cap", min(200, MAX_CORPUS_LINES))
    cap = int(c_cap.number_input("At most", min_value=1, max_value=MAX_CORPUS_LINES, step=50, key=f"{key}_cap"))
    corpus = _corpus(active, source, cap, key)
    if corpus is None:
        return
    st.caption(f"Reads {md(corpus.describe())}.")
    adapter = active.adapter
    use_refs = corpus.references is not None and adapter.family.decodes and st.toggle(
        "Teacher-force the references", key=f"{key}_refs", help="Off: the model's own greedy output.")
    refs = corpus.references if use_refs else None
    identity = ("corpus", active.cache_key, corpus.sources, refs)

    def run(progress) -> CorpusStats:
        return corpus_statistics(adapter, corpus.sources, refs, progress=lambda done, total: progress(done / total))

    stats = _computed(identity, f"Reading {len(corpus.sources):,} sentences", run, key,
                      ("Compute the statistics", ":material/play_arrow:"))
    if stats is None:
        return
    st.session_state[f"{key}_sources"] = corpus.sources
    st.session_state[LATEST_KEY] = (active.cache_key, stats)
    st.session_state[LATEST_CORPUS_KEY] = (active.cache_key, corpus.sources, refs)
    _show(stats, {k: h for k, (_, h) in active.adapter.head_counts().items()}, key, active.option.id)
    _show_snapshots(active, corpus.sources, refs, key)


def _computed(identity: tuple, label: str, run, key: str, button: tuple[str, str]) -> Any | None:
    """The result of a background analysis for `identity` (kept, or computed off the script thread), with the button
    that starts it while there is none."""
    result = analysis_result(identity, label, run, key=key)
    if result is None and can_start(identity):
        start_button(button[0], identity, key=key, icon=button[1])
    return result


def _show_snapshots(active: ActiveModel, sources: tuple[str, ...], refs: tuple[str, ...] | None, key: str) -> None:
    """A saved run with weight snapshots (train --keep-snapshots, the Train page's switch): the same statistics
    over each snapshot, in the background, drawn as each head's curve over the training steps."""
    path = active.option.path
    snapshots = list_snapshots(path) if path is not None and path.is_dir() else []
    if not snapshots:
        return
    steps = [step for step, _ in snapshots]
    st.markdown(f"**Over training: {len(steps)} weight snapshots** (steps {steps[0]:,}–{steps[-1]:,})")
    identity = ("corpus-snapshots", active.cache_key, tuple(steps), sources, refs)

    def run(progress) -> dict:
        stats = []
        for i, (_, folder) in enumerate(snapshots):
            def part(done: int, total: int, i: int = i) -> None:
                progress((i + done / total) / len(snapshots))
            stats.append(corpus_statistics(open_model(str(folder)), sources, refs, progress=part))
        return snapshot_curves(steps, stats)

    curves = _computed(identity, f"Reading {len(sources):,} sentences with {len(steps)} snapshots", run,
                       f"{key}_snapshots", ("Compute over the snapshots", ":material/timeline:"))
    if curves is None:
        return
    keep_snapshot_curves(active, curves)
    kinds = list(dict.fromkeys(h["kind"] for h in curves["heads"]))
    c_stat, c_kind = st.columns([1, 2])
    st.session_state.setdefault(f"{key}_snapshots_stat", "entropy")
    statistic = c_stat.selectbox("Statistic", list(CORPUS_STATISTICS), key=f"{key}_snapshots_stat",
                                 help="\n\n".join(f"**{n}**: {w}" for n, w in CORPUS_STATISTICS.items()))
    kind = c_kind.radio("Heads of", kinds, format_func=ALL_TITLES.__getitem__, key=f"{key}_snapshots_kind",
                        horizontal=True)
    try:
        show_chart(snapshot_curves_chart(curves, statistic, kind), width="content")
    except ValueError:
        st.info(f"{ALL_TITLES[kind]} has no {statistic}.", icon=":material/info:")
