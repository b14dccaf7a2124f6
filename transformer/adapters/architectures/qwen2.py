"""Qwen2: Llama's layout with biased q, k, v projections and a causal sliding window on the layers that have one."""
from __future__ import annotations

from .llama import llama_like
from .spec import WINDOW

ARCHITECTURE = llama_like("qwen2", terms=frozenset({WINDOW}))
