"""One level down from a QK table: a score over dictionary features (docs/dictionaries.md), where a dictionary of
each stream the head reads, trained on this model, sits in the checkpoints' `dictionaries/` folder or among those
the app trained. Every view that
shows a QK table offers it (What made this score on Attention and Decode, the circuit's edge on Compare)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from transformer.analysis import PathCapture
from transformer.charts import feature_pairs_chart
from transformer.dictionaries import Dictionary, DictionaryError, feature_qk, load_dictionary, needed_sites
from transformer.model import Head
from ui.models import ActiveModel
from ui.server import checkpoints_root, shared

from .dictionary_texts import trained_root
from .widgets import show_chart

TOP_FEATURE_PAIRS = 12


@shared
def _dictionaries(folder: str, stamp: float) -> tuple[tuple[str, Dictionary], ...]:
    """Every dictionary folder directly under `folder` that opens (`stamp`: the folder's mtime, so a new one shows)."""
    found = []
    for path in sorted(Path(folder).iterdir()) if Path(folder).is_dir() else []:
        try:
            found.append((path.name, load_dictionary(path)))
        except DictionaryError:
            continue
    return tuple(found)


def folder_dictionaries(folder: Path) -> tuple[tuple[str, Dictionary], ...]:
    """Every dictionary folder directly under `folder` that opens, by name (kept until the folder changes)."""
    return _dictionaries(str(folder), folder.stat().st_mtime if folder.is_dir() else 0.0)


def model_dictionaries(active: ActiveModel) -> dict[str, Dictionary]:
    """The dictionaries trained on this model, by folder name: the checkpoints' `dictionaries/` folder first, then
    those the app trained (the runs folder's)."""
    out: dict[str, Dictionary] = {}
    for root in (checkpoints_root() / "dictionaries", trained_root()):
        for name, dictionary in folder_dictionaries(root):
            if dictionary.names_model(active.adapter.name):
                out.setdefault(name, dictionary)
    return out


def show_feature_cell(model: ActiveModel, cap: PathCapture, head: Head, query: int, key: int, page: str) -> None:
    """The score of `head` at (query, key) of `cap` over the features of this model's dictionaries, behind a toggle
    (widget `{page}_feature_qk_on`): the sum line, the pairs and terms, links to the top pair's features."""
    if st.toggle("One level down: the score in dictionary features", key=f"{page}_feature_qk_on"):
        name = model.adapter.name
        sites = dict.fromkeys(needed_sites(cap, head))
        mine = [(folder, d) for folder, d in model_dictionaries(model).items() if d.site in sites]
        missing = [s.label for s in sites if all(d.site != s for _, d in mine)]
        if missing:
            st.info(f"No dictionary of {' and '.join(missing)} for {name} yet: train one with `python -m transformer "
                    f"dictionary train MODEL --site {missing[0]} --features 512 --out "
                    f"checkpoints/dictionaries/NAME` (docs/dictionaries.md).", icon=":material/info:")
            return
        try:
            table = feature_qk(cap, head, query, key, [d for _, d in mine])
        except DictionaryError as exc:
            st.warning(str(exc), icon=":material/error:")
            return
        pairs = table.pairs()
        st.markdown(f"**{len(pairs):,} feature pairs** ({', '.join(f'{folder}' for folder, _ in mine)}): pairs "
                    f"**{sum(c for _, _, c in pairs):+.4f}** + terms **{sum(table.terms().values()):+.4f}** = "
                    f"**{table.total:+.4f}**, the score **{table.score:+.4f}**; the error terms are "
                    f"{100 * table.error_share():.0f} % of it.")
        untrained = [folder for folder, d in mine if not d.trained]
        if untrained:
            st.caption(f"{', '.join(untrained)}: no training report (an untrained dictionary's features mean little).")
        show_chart(feature_pairs_chart(table, TOP_FEATURE_PAIRS), key=f"{page}_feature_qk_chart", width="content")
        if pairs:
            folders = {d.site: folder for folder, d in mine}
            q, k, _ = pairs[0]
            with st.container(horizontal=True):
                for side, feature, site in (("query", q, table.query_site), ("key", k, table.key_site)):
                    st.page_link("pages/dictionary.py", label=f"Open the top pair's {side} feature #{feature}",
                                 icon=":material/open_in_new:", query_params={
                                     "model": model.option.id, "dict": folders[site],
                                     "feature": str(feature)})
        st.caption("Each side's stream is the dictionary's active features plus an error and a bias term; the pairs "
                   "of features (q#i × k#j, 0-based ids) and the terms sum to the score. "
                   "`python -m transformer qk … --dictionary DIR --json` gives every pair.")
