"""Marian (opus-mt): BART's layout, post-norm, a fixed sinusoidal position table, no embedding norm."""
from __future__ import annotations

from .bart import seq2seq
from .spec import SINUSOIDAL

ARCHITECTURE = seq2seq("marian", pre_norm=False, positions=SINUSOIDAL)
