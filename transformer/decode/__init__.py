"""The decode stage: text in, `DecodeResult` with its `AttentionTrace` out (greedy, teacher-forced)."""
from .beam import Hypothesis, beam_search, beam_texts
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
from .trace import KIND_TITLES, KINDS, MEAN_HEAD, AttentionTrace

__all__ = ["Hypothesis", "beam_search", "beam_texts", "AttentionTrace", "DecodeResult", "InputError", "KINDS", "KIND_TITLES", "MAX_INPUT_CHARS", "MEAN_HEAD",
           "decode_texts", "encode_source", "eval_mode", "greedy_batch", "greedy_decode", "teacher_forced"]
