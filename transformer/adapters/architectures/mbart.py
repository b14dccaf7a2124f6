"""mBART: BART's layout, pre-norm (each sublayer's norm before it), a final norm on each stack."""
from __future__ import annotations

from .bart import seq2seq
from .spec import LEARNED

ARCHITECTURE = seq2seq("mbart", pre_norm=True, positions=LEARNED)
