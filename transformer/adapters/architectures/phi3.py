"""Phi-3: Llama's norms, q, k and v fused one after another in `qkv_proj` (grouped-query sizes), a sliding window
where the config sets one."""
from __future__ import annotations

from .llama import llama_like
from .spec import SEQUENTIAL, WINDOW, Qkv

ARCHITECTURE = llama_like("phi3", qkv=Qkv(SEQUENTIAL, ("qkv_proj",)), terms=frozenset({WINDOW}))
