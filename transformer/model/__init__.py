"""The model stage: validated configs, our encoder-decoder (`nn.Module`s only) and the optimizer it trains with."""
from .architectures import ARCHITECTURES, build_model, family_of_model
from .attention import MultiHeadAttention, attention, attention_weights
from .config import (
                     ARCHITECTURE_NAMES,
                     MAX_STEPS,
                     PRESETS,
                     TASK_DEFAULTS,
                     ConfigError,
                     ModelConfig,
                     TrainConfig,
                     check_int,
                     default_configs,
)
from .decoder_only import DecoderOnlyTransformer, PrefixCache
from .dropout import Dropout, dropout
from .encoder_decoder import Seq2SeqTransformer, sinusoidal_positions
from .families import (
                     ALL_KINDS,
                     ALL_TITLES,
                     DECODER_ONLY,
                     ENCODER_DECODER,
                     FAMILIES,
                     SOURCE,
                     TARGET,
                     ModelFamily,
                     family_of,
                     family_with_kinds,
)
from .hf_auto import HF_ADAPTERS, load_hf_model
from .hf_causal import MAX_PROMPT_TOKENS, HFCausalLM, causal_attention_outputs
from .hf_load import DEFAULT_MAX_PARAMS, HFModelError, import_model_code, load_pretrained
from .hf_seq2seq import HFSeq2Seq, heads_off, model_lock
from .interface import InspectableSeq2Seq, SourceText
from .layers import DecoderLayer, EncoderLayer, FeedForward
from .modes import eval_mode
from .optimizer import make_optimizer
from .outputs import KINDS, AttentionMaps, EncoderOutput, ForwardOutput, HeadMask, StepOutput

__all__ = ["ARCHITECTURE_NAMES", "ARCHITECTURES", "build_model", "family_of_model", "DecoderOnlyTransformer",
           "PrefixCache", "ALL_KINDS", "ALL_TITLES", "DECODER_ONLY", "ENCODER_DECODER", "FAMILIES", "SOURCE", "TARGET",
           "ModelFamily", "family_of", "family_with_kinds", "HF_ADAPTERS", "load_hf_model", "MAX_PROMPT_TOKENS",
           "HFCausalLM", "causal_attention_outputs", "AttentionMaps", "ConfigError", "DEFAULT_MAX_PARAMS", "DecoderLayer", "Dropout", "EncoderLayer",
           "EncoderOutput", "FeedForward", "ForwardOutput", "HFModelError", "import_model_code", "HFSeq2Seq", "HeadMask", "InspectableSeq2Seq",
           "KINDS", "MAX_STEPS", "ModelConfig", "MultiHeadAttention", "PRESETS", "Seq2SeqTransformer", "SourceText",
           "StepOutput", "TASK_DEFAULTS", "TrainConfig", "attention", "attention_weights", "check_int",
           "default_configs", "dropout", "eval_mode", "heads_off", "load_pretrained", "make_optimizer", "model_lock",
           "sinusoidal_positions"]
