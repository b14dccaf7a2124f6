"""The model stage: validated configs, our encoder-decoder (`nn.Module`s only) and the optimizer it trains with."""
from .attention import MultiHeadAttention, attention, attention_weights
from .config import (MAX_STEPS, PRESETS, TASK_DEFAULTS, ConfigError, ModelConfig, TrainConfig, check_int,
                     default_configs)
from .dropout import Dropout, dropout
from .encoder_decoder import Seq2SeqTransformer, sinusoidal_positions
from .hf_load import DEFAULT_MAX_PARAMS, HFModelError, load_pretrained
from .hf_seq2seq import HFSeq2Seq, heads_off, model_lock
from .interface import InspectableSeq2Seq, SourceText
from .layers import DecoderLayer, EncoderLayer, FeedForward
from .modes import eval_mode
from .optimizer import make_optimizer
from .outputs import KINDS, AttentionMaps, EncoderOutput, ForwardOutput, HeadMask, StepOutput

__all__ = ["AttentionMaps", "ConfigError", "DEFAULT_MAX_PARAMS", "DecoderLayer", "Dropout", "EncoderLayer",
           "EncoderOutput", "FeedForward", "ForwardOutput", "HFModelError", "HFSeq2Seq", "HeadMask", "InspectableSeq2Seq",
           "KINDS", "MAX_STEPS", "ModelConfig", "MultiHeadAttention", "PRESETS", "Seq2SeqTransformer", "SourceText",
           "StepOutput", "TASK_DEFAULTS", "TrainConfig", "attention", "attention_weights", "check_int",
           "default_configs", "dropout", "eval_mode", "heads_off", "load_pretrained", "make_optimizer", "model_lock",
           "sinusoidal_positions"]
