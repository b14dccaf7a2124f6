"""Mistral: Llama's layout with a causal sliding window (`sliding_window`)."""
from __future__ import annotations

from .llama import llama_like
from .spec import WINDOW

ARCHITECTURE = llama_like("mistral", terms=frozenset({WINDOW}))
