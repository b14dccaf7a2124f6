"""The decode stage: text in, `DecodeResult` with its `AttentionTrace` out (greedy, teacher-forced), for any
`InspectableModel` of the adapter stage (`transformer.adapters`). `greedy_decode` is the one greedy entry at every
length (`keep`: maps, the attention store, or auto by `keeps_store`)."""
from .batched import can_batch, greedy_decode_many
from .beam import Hypothesis, beam_search, beam_texts
from .beam_tree import BeamHypothesis, BeamNode, BeamTree, beam_tree
from .decode_queue import DECODES, DecodeQueue, queued_greedy
from .errors import InputError
from .greedy import (
                     CHARS_PER_TOKEN,
                     MAX_INPUT_CHARS,
                     DecodeResult,
                     Step,
                     char_limit,
                     encode_source,
                     fit_input,
                     greedy_decode,
                     read_source,
                     teacher_forced,
)
from .keep import KEEPS, STORE_ABOVE, STORED_STEPS, keeps_store, model_context
from .masked import FillResult, MaskPrediction, fill_masks, masked_decode, no_mask_message, read_masked
from .perplexity import perplexity
from .residuals import ResidualRecorder, Residuals
from .sampling import MAX_TEMPERATURE, SampledStep, Sampling, SamplingError, check_sampling, warp
from .scoring import score_parallel
from .segments import (
                     GROUPINGS,
                     GroupingError,
                     group_index,
                     group_sums,
                     merge_segments,
                     piece_text,
                     segment_groups,
                     segment_labels,
)
from .sinks import hidden_dict, hidden_note, hide_tokens, sink_positions
from .trace import ALL_TITLES, KIND_TITLES, KINDS, MEAN_HEAD, TRACE_FORMAT_VERSION, AttentionTrace, head_label
from .trace_json import SIDE_FILE_ABOVE, TraceFormatError, load_trace_json, result_from_dict, save_trace_json
from .words import merge_groups, merge_words, word_groups

__all__ = ["ALL_TITLES", "CHARS_PER_TOKEN", "DECODES", "KINDS", "KIND_TITLES", "MAX_INPUT_CHARS", "MAX_TEMPERATURE",
           "MEAN_HEAD", "SIDE_FILE_ABOVE", "STORE_ABOVE", "TRACE_FORMAT_VERSION", "AttentionTrace", "BeamHypothesis",
           "BeamNode", "BeamTree", "DecodeQueue", "DecodeResult", "FillResult", "Hypothesis", "InputError",
           "MaskPrediction", "ResidualRecorder", "Residuals", "SampledStep", "Sampling", "SamplingError", "Step",
           "TraceFormatError", "beam_search", "beam_texts", "beam_tree", "can_batch", "char_limit", "check_sampling",
           "encode_source", "fill_masks", "fit_input", "greedy_decode", "greedy_decode_many",
           "head_label", "hidden_dict", "hidden_note", "hide_tokens", "load_trace_json", "masked_decode", "merge_words",
           "model_context", "no_mask_message", "perplexity", "queued_greedy", "read_masked", "read_source",
           "result_from_dict", "save_trace_json", "score_parallel", "sink_positions",
           "teacher_forced", "warp", "word_groups"]
__all__ += ["KEEPS", "STORED_STEPS", "keeps_store"]
__all__ += ["GROUPINGS", "GroupingError", "group_index", "group_sums", "merge_groups", "merge_segments", "piece_text",
            "segment_groups", "segment_labels"]
