"""RoBERTa: BERT's layout, its MLM head `lm_head`, positions counted from after the pad id (pad + 1 rows are not
positions)."""
from __future__ import annotations

from typing import Any

from .bert import bert_like


def after_pad(config: Any) -> int:
    """Rows of the position table before the first token's: the pad id's and those below it."""
    return int(getattr(config, "pad_token_id", 1) or 1) + 1


ARCHITECTURE = bert_like("roberta", lambda model: model.lm_head, after_pad)
