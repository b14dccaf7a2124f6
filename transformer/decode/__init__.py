"""The decode stage: text in, `DecodeResult` with its `AttentionTrace` out (greedy, teacher-forced), for any
`InspectableSeq2Seq` (ours via `NativeSeq2Seq`, Hugging Face ones via `transformer.model.HFSeq2Seq`)."""
from .beam import Hypothesis, beam_search, beam_texts
from .greedy import (
                     MAX_INPUT_CHARS,
                     DecodeResult,
                     InputError,
                     Step,
                     encode_source,
                     greedy_decode,
                     read_source,
                     teacher_forced,
)
from .native import UNEMITTABLE, NativeSeq2Seq, ban, decode_texts, eval_mode, greedy_batch
from .perplexity import perplexity
from .scoring import score_parallel
from .sinks import hidden_dict, hidden_note, hide_tokens, sink_positions
from .trace import ALL_TITLES, KIND_TITLES, KINDS, MEAN_HEAD, AttentionTrace, head_label
from .trace_json import TraceFormatError, load_trace_json, result_from_dict
from .words import merge_words, word_groups

__all__ = ["ALL_TITLES", "TraceFormatError", "load_trace_json", "result_from_dict", "perplexity", "AttentionTrace", "DecodeResult", "Hypothesis", "InputError", "KINDS", "KIND_TITLES", "MAX_INPUT_CHARS",
           "MEAN_HEAD", "NativeSeq2Seq", "Step", "UNEMITTABLE", "ban", "beam_search", "beam_texts",
           "decode_texts", "encode_source", "eval_mode", "greedy_batch", "greedy_decode",
           "head_label", "hidden_dict", "hidden_note", "hide_tokens", "read_source", "sink_positions",
           "score_parallel", "teacher_forced", "merge_words", "word_groups"]
