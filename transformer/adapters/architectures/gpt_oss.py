"""gpt-oss: Llama's layout with biased projections and a mixture of experts as the MLP; its rotary tables hold each
angle once (for both halves), sliding windows on alternate layers, and a learned sink logit per head that joins
each softmax's normaliser (a rule of the softmax, not a score)."""
from __future__ import annotations

from .llama import llama_like
from .spec import HALF_TABLES, SINKS, WINDOW

ARCHITECTURE = llama_like("gpt_oss", rope=HALF_TABLES, terms=frozenset({WINDOW, SINKS}))
