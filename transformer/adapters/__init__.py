"""The adapter stage: `InspectableModel`, the one interface every model family answers to (tokens, encoder and
decoder steps with their attention, heads, gradients), one adapter per family, and `adapter_for` /
`load_hf_model`, the one place that picks an adapter for a loaded model."""
from . import capture
from .auto import HF_ADAPTERS, NATIVE_ADAPTERS, adapter_for, load_hf_model
from .hf_causal import MAX_PROMPT_TOKENS, HFCausalLM, causal_attention_outputs
from .hf_head import fast_output_head
from .hf_load import DEFAULT_MAX_PARAMS, HFModelError, import_model_code, load_pretrained
from .hf_masked import HFMaskedLM, masked_attention_outputs, mlm_head
from .hf_base import HFAdapter, model_lock
from .hf_seq2seq import HFSeq2Seq, heads_off
from .interface import InspectableModel, SourceText
from .native import NativeSeq2Seq
from .native_base import UNEMITTABLE, NativeAdapter, ban, decode_texts, greedy_batch
from .native_causal import NativeDecoderOnly
from .native_masked import NativeEncoderOnly
from .paths import MLP, PathRecord, Projections, ResidualPath, ResidualPathError, StackPath, Sublayer
from .positions import LEARNED, RELATIVE, ROTARY, SINUSOIDAL, PositionScheme, position_scheme
from .residual_steps import check_encoder_layer, recording_calls
from .store_capture import attention_store, store_of_insides
from .store_forward import StoreChunks, build_store, store_chunks, store_feed

__all__ = ["capture", "HF_ADAPTERS", "NATIVE_ADAPTERS", "adapter_for", "load_hf_model", "MAX_PROMPT_TOKENS", "HFCausalLM",
           "causal_attention_outputs", "fast_output_head", "DEFAULT_MAX_PARAMS", "HFModelError", "import_model_code",
           "load_pretrained", "HFMaskedLM", "masked_attention_outputs", "mlm_head", "HFAdapter", "HFSeq2Seq", "heads_off", "model_lock",
           "InspectableModel", "SourceText", "UNEMITTABLE",
           "NativeAdapter", "NativeSeq2Seq", "NativeDecoderOnly", "NativeEncoderOnly", "ban", "decode_texts", "greedy_batch",
           "check_encoder_layer", "recording_calls", "MLP", "PathRecord", "Projections", "ResidualPath",
           "ResidualPathError", "StackPath", "Sublayer",
           "LEARNED", "RELATIVE", "ROTARY", "SINUSOIDAL", "PositionScheme", "position_scheme"]
__all__ += ["attention_store", "store_of_insides", "StoreChunks", "build_store", "store_chunks", "store_feed"]
