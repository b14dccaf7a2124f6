"""The decode stage: text in, `DecodeResult` with its `AttentionTrace` out (greedy, teacher-forced)."""
from .greedy import (
                     MAX_INPUT_CHARS,
                     DecodeResult,
                     InputError,
                     decode_texts,
                     encode_source,
                     eval_mode,
                     greedy_batch,
                     greedy_decode,
                     teacher_forced,
)
from .trace import KIND_TITLES, KINDS, MEAN_HEAD, AttentionTrace, head_label

__all__ = ["AttentionTrace", "DecodeResult", "InputError", "KINDS", "KIND_TITLES", "MAX_INPUT_CHARS", "MEAN_HEAD",
           "decode_texts", "encode_source", "eval_mode", "greedy_batch", "greedy_decode", "head_label", "teacher_forced"]
