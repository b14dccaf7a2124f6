"""XLM-RoBERTa: RoBERTa's layout and positions."""
from __future__ import annotations

from .bert import bert_like
from .roberta import after_pad

ARCHITECTURE = bert_like("xlm-roberta", lambda model: model.lm_head, after_pad)
