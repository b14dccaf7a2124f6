"""The decode stage: text in, `DecodeResult` with its `AttentionTrace` out (greedy, teacher-forced), for any
`InspectableModel` of the adapter stage (`transformer.adapters`)."""
from .batched import can_batch, greedy_decode_many
from .beam import Hypothesis, beam_search, beam_texts
from .beam_tree import BeamHypothesis, BeamNode, BeamTree, beam_tree
from .greedy import (
                     MAX_INPUT_CHARS,
                     DecodeResult,
                     InputError,
                     Step,
                     encode_source,
                     fit_input,
                     greedy_decode,
                     read_source,
                     teacher_forced,
)
from .decode_queue import DECODES, DecodeQueue, queued_greedy
from .masked import FillResult, MaskPrediction, fill_masks, masked_decode, no_mask_message, read_masked
from .perplexity import perplexity
from .residuals import ResidualRecorder, Residuals
from .sampling import MAX_TEMPERATURE, SampledStep, Sampling, SamplingError, check_sampling, warp
from .scoring import score_parallel
from .sinks import hidden_dict, hidden_note, hide_tokens, sink_positions
from .trace import ALL_TITLES, KIND_TITLES, KINDS, MEAN_HEAD, TRACE_FORMAT_VERSION, AttentionTrace, head_label
from .stored import STORE_ABOVE, decode_text, model_context, stored_decode, stored_greedy
from .trace_json import SIDE_FILE_ABOVE, TraceFormatError, load_trace_json, result_from_dict, save_trace_json
from .words import merge_words, word_groups

__all__ = ["FillResult", "MaskPrediction", "fill_masks", "masked_decode", "no_mask_message", "read_masked", "ALL_TITLES", "TraceFormatError", "load_trace_json", "result_from_dict", "perplexity", "AttentionTrace", "DecodeResult", "Hypothesis", "InputError", "fit_input", "KINDS", "KIND_TITLES", "MAX_INPUT_CHARS",
           "MEAN_HEAD", "Step", "TRACE_FORMAT_VERSION", "beam_search", "beam_texts",
           "encode_source", "greedy_decode",
           "head_label", "hidden_dict", "hidden_note", "hide_tokens", "read_source", "sink_positions",
           "score_parallel", "teacher_forced", "merge_words", "word_groups",
           "ResidualRecorder", "Residuals",
           "MAX_TEMPERATURE", "SampledStep", "Sampling", "SamplingError", "check_sampling", "warp",
           "BeamHypothesis", "BeamNode", "BeamTree", "beam_tree"]
__all__ += ["DECODES", "DecodeQueue", "can_batch", "greedy_decode_many", "queued_greedy"]
__all__ += ["STORE_ABOVE", "decode_text", "SIDE_FILE_ABOVE", "model_context", "save_trace_json", "stored_decode",
            "stored_greedy"]
