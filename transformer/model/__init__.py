"""The model stage: validated configs, our encoder-decoder (`nn.Module`s only) and the optimizer it trains with."""
from .config import (MAX_STEPS, PRESETS, TASK_DEFAULTS, ConfigError, ModelConfig, TrainConfig, check_int,
                     default_configs)
from .encoder_decoder import (
                              HeadMask,
                              MultiHeadAttention,
                              Seq2SeqTransformer,
                              attention,
                              attention_weights,
                              sinusoidal_positions,
)
from .optimizer import make_optimizer

__all__ = ["ConfigError", "HeadMask", "MAX_STEPS", "ModelConfig", "MultiHeadAttention", "PRESETS", "Seq2SeqTransformer",
           "TASK_DEFAULTS", "TrainConfig", "attention", "check_int", "attention_weights", "default_configs", "make_optimizer",
           "sinusoidal_positions"]
