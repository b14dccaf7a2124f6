"""The adapter stage: `InspectableModel`, the one interface every model family answers to (tokens, encoder and
decoder steps with their attention, heads, gradients), one adapter per family, and `adapter_for` /
`load_hf_model`, the one place that picks an adapter for a loaded model."""
from . import capture
from .architectures import Architecture, architecture, architecture_of, norm_gain, registered, supported
from .auto import NATIVE_ADAPTERS, adapter_for, load_hf_model
from .hf_base import HFAdapter, attention_outputs, model_lock
from .hf_causal import HFCausalLM
from .hf_head import fast_output_head
from .hf_load import DEFAULT_MAX_PARAMS, HFModelError, import_model_code, load_pretrained
from .hf_masked import HFMaskedLM, mlm_head
from .hf_seq2seq import HFSeq2Seq, heads_off
from .interface import InspectableModel, SourceText
from .native import NativeSeq2Seq
from .native_base import UNEMITTABLE, NativeAdapter, ban, decode_texts, greedy_batch
from .native_causal import NativeDecoderOnly
from .native_masked import NativeEncoderOnly
from .paths import (
    MLP,
    PathRecord,
    Projections,
    ResidualPath,
    ResidualPathError,
    StackPath,
    Sublayer,
    hf_path,
    native_path,
)
from .positions import LEARNED, RELATIVE, ROTARY, SINUSOIDAL, PositionScheme, position_scheme
from .residual_steps import check_encoder_layer, recording_calls
from .store_capture import attention_store, store_of_insides
from .store_forward import StoreChunks, build_store, store_chunks

__all__ = ["DEFAULT_MAX_PARAMS", "LEARNED", "MLP", "NATIVE_ADAPTERS", "RELATIVE",
           "ROTARY", "SINUSOIDAL", "UNEMITTABLE", "HFAdapter", "HFCausalLM", "HFMaskedLM", "HFModelError", "HFSeq2Seq",
           "InspectableModel", "NativeAdapter", "NativeDecoderOnly", "NativeEncoderOnly", "NativeSeq2Seq", "PathRecord",
           "PositionScheme", "Projections", "ResidualPath", "ResidualPathError", "SourceText", "StackPath", "Sublayer",
           "adapter_for", "attention_outputs", "ban", "capture", "check_encoder_layer", "decode_texts",
           "fast_output_head", "greedy_batch", "heads_off", "import_model_code", "load_hf_model", "load_pretrained",
           "mlm_head", "model_lock", "position_scheme", "recording_calls"]
__all__ += ["StoreChunks", "attention_store", "build_store", "store_chunks", "store_of_insides"]
__all__ += ["hf_path", "native_path", "norm_gain"]
__all__ += ["Architecture", "architecture", "architecture_of", "registered", "supported"]
