"""Qwen3: Llama's layout with a per-head RMS norm of the queries and keys before RoPE (`q_norm`, `k_norm`) and a
sliding window on the layers that have one."""
from __future__ import annotations

from .llama import llama_like
from .spec import WINDOW

ARCHITECTURE = llama_like("qwen3", terms=frozenset({WINDOW}))
