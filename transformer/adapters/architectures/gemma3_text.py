"""Gemma 3 (text): Gemma 2's norms ((1 + w) RMS norms before and after each sublayer), a per-head query and key
norm, sliding windows on most layers, no soft-capping."""
from __future__ import annotations

from .gemma2 import GEMMA_KINDS, GEMMA_MLP
from .llama import llama_like
from .spec import WINDOW

ARCHITECTURE = llama_like("gemma3_text", kinds=GEMMA_KINDS, mlp=GEMMA_MLP, terms=frozenset({WINDOW}),
                          offset_norms=("Gemma3RMSNorm",))
