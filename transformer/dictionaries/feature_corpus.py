"""A dictionary's features over a model's texts, read once for a feature page and its finder: the site's activations,
every row's feature activations, the finder's table, each example's context in its text, and (an attention-output
dictionary) which sources wrote an example."""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd
import torch

from ..adapters import InspectableModel
from .activations import Activations, site_activations
from .dictionary import Dictionary
from .feature_sources import FeatureSources, feature_sources
from .feature_stats import Example, encoded, feature_frame
from .sites import DictionaryError, place

CONTEXT = (8, 3)  # tokens shown before and after an example's token


@dataclass(frozen=True)
class FeatureCorpus:
    """`activations` at the dictionary's site over the texts, `codes` (N, F) their features, `frame` the finder's
    table (`feature_frame`), `described` what the texts were."""

    activations: Activations
    codes: torch.Tensor
    frame: pd.DataFrame
    described: str
    texts: tuple[str, ...] = ()

    def context(self, example: Example, before: int = CONTEXT[0], after: int = CONTEXT[1]
                ) -> tuple[list[str], str, list[str]]:
        """The tokens of the example's text before it, its own token and those after (at most `before`/`after`)."""
        acts = self.activations
        rows = range(bisect_left(acts.texts, example.text), bisect_right(acts.texts, example.text))  # texts in order
        by_pos = {acts.positions[i]: acts.tokens[i] for i in rows}
        p = example.position
        return ([by_pos[q] for q in range(max(0, p - before), p) if q in by_pos], by_pos.get(p, example.token),
                [by_pos[q] for q in range(p + 1, p + 1 + after) if q in by_pos])


def feature_corpus(adapter: InspectableModel, dictionary: Dictionary, texts: Sequence[str],
                   references: Sequence[str] | None = None, described: str = "",
                   progress: Callable[[int, int], None] | None = None) -> FeatureCorpus:
    """The dictionary's features over `texts` on `adapter` (DictionaryError in one line where it does not fit)."""
    where = place(dictionary.site, adapter)
    dictionary.check_width(where.width, adapter.name)
    acts = site_activations(adapter, where, texts, references, progress=progress)
    codes = encoded(dictionary, acts)
    return FeatureCorpus(acts, codes, feature_frame(dictionary, codes, acts), described or f"{len(texts):,} texts",
                         tuple(texts))


def example_sources(adapter: InspectableModel, dictionary: Dictionary, corpus: FeatureCorpus, feature: int,
                    example: Example) -> tuple[FeatureSources, list[str]]:
    """Which sources wrote `feature` at `example` (an attention-output dictionary on a source-side stack: one forward
    of the example's text), and the text's tokens; DictionaryError in one line otherwise."""
    where = place(dictionary.site, adapter)
    if where.kind is None or adapter.family.has_cross and where.stack == "decoder":
        raise DictionaryError("which sources wrote a feature is shown for attention-output dictionaries on a prompt "
                              f"or source stack, not {where.site.label}")
    source = adapter.tokenize_source(corpus.texts[example.text])
    ids = list(source.ids)[: adapter.max_source_len]
    with torch.no_grad():
        insides = adapter.padded_insides([ids])
    found = feature_sources(insides, where, dictionary, feature, example.position)
    tokens = list(source.tokens)[: len(ids)]
    if adapter.family.decodes:  # a decoder-only model reads its start token after the prompt
        tokens += adapter.ids_to_tokens(list(adapter.start_ids))
    n_keys = found.contributions.shape[1]
    return found, (tokens + [""] * n_keys)[:n_keys]
