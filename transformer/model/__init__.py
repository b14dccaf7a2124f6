"""The model stage: validated configs, our encoder-decoder, decoder-only and encoder-only models (`nn.Module`s
only), the typed records of what they capture, and the optimizer they train with."""
from .architectures import ARCHITECTURES, Network, build_model, family_of_model
from .attention import MultiHeadAttention, attention, attention_weights, band_mask
from .attention_store import (
                     AttentionStore,
                     LayerStore,
                     RelativeBias,
                     ScoreRules,
                     StoreError,
                     layer_store,
                     row_lse,
                     tile,
                     value_norms,
)
from .config import (
                     ARCHITECTURE_NAMES,
                     MAX_STEPS,
                     POSITION_SCHEMES,
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
from .encoder_only import EncoderOnlyTransformer, segments_of
from .families import (
                     ALL_KINDS,
                     ALL_TITLES,
                     DECODER_ONLY,
                     ENCODER_DECODER,
                     ENCODER_ONLY,
                     FAMILIES,
                     SOURCE,
                     TARGET,
                     ModelFamily,
                     family_of,
                     family_with_kinds,
)
from .head import KIND_CODES, MEAN_HEAD, Head, HeadError, head_label
from .insides import AttentionInputs, Insides, additive_mask
from .layers import DecoderLayer, EncoderLayer, FeedForward
from .modes import eval_mode
from .optimizer import make_optimizer
from .outputs import KINDS, AttentionMaps, EncoderOutput, ForwardOutput, HeadMask, StepOutput
from .rotary import apply_rotation, rotate_half
from .shapes import shapes_only
from .stage_recipe import STAGE_RECIPES, CleanRule, StageRecipe, stage_configs, stage_recipe
from .store_tensors import store_from_tensors, store_tensors

__all__ = ["ALL_KINDS", "ALL_TITLES", "ARCHITECTURES", "ARCHITECTURE_NAMES", "DECODER_ONLY", "ENCODER_DECODER",
           "ENCODER_ONLY", "FAMILIES", "KINDS", "KIND_CODES", "MAX_STEPS", "MEAN_HEAD", "POSITION_SCHEMES", "PRESETS",
           "SOURCE", "STAGE_RECIPES", "TARGET", "TASK_DEFAULTS", "AttentionInputs", "AttentionMaps", "AttentionStore",
           "CleanRule", "ConfigError", "DecoderLayer", "DecoderOnlyTransformer", "Dropout", "EncoderLayer",
           "EncoderOnlyTransformer", "EncoderOutput", "FeedForward", "ForwardOutput", "Head", "HeadError", "HeadMask",
           "Insides", "LayerStore", "ModelConfig", "ModelFamily", "MultiHeadAttention", "Network", "PrefixCache",
           "RelativeBias", "ScoreRules", "Seq2SeqTransformer", "StageRecipe", "StepOutput", "StoreError", "TrainConfig",
           "additive_mask", "apply_rotation", "attention", "attention_weights", "band_mask", "build_model", "check_int",
           "default_configs", "dropout", "eval_mode", "family_of", "family_of_model", "family_with_kinds", "head_label",
           "layer_store", "make_optimizer", "rotate_half", "row_lse", "segments_of", "shapes_only",
           "sinusoidal_positions", "stage_configs", "stage_recipe", "store_from_tensors", "store_tensors", "tile",
           "value_norms"]
