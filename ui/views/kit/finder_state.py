"""Session-state keys the corpus statistics leave for the head finder, and the finder for a head's page (each reads
them from the kit)."""
from __future__ import annotations

SNAPSHOTS_KEY = "corpus_snapshots_latest"  # (model cache key, snapshot curves): the finder's slider over training
# (model cache key, first sentences, their references or None, CorpusEstimate or None): the ablation estimate the
# finder drew last (its `estimate` column), for the head page to show the same number
ESTIMATE_KEY = "finder_estimate_latest"
