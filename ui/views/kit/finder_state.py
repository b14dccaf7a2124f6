"""Session-state keys the corpus statistics leave for the head finder (both features read them from the kit)."""
from __future__ import annotations

SNAPSHOTS_KEY = "corpus_snapshots_latest"  # (model cache key, snapshot curves): the finder's slider over training
