"""Our architectures by name (the model config's `architecture`): the one place that picks the module class."""
from __future__ import annotations

from torch import nn

from .config import ModelConfig
from .decoder_only import DecoderOnlyTransformer
from .encoder_decoder import Seq2SeqTransformer
from .encoder_only import EncoderOnlyTransformer
from .families import FAMILIES, ModelFamily

ARCHITECTURES: dict[str, type[nn.Module]] = {"encoder-decoder": Seq2SeqTransformer,
                                             "decoder-only": DecoderOnlyTransformer,
                                             "encoder-only": EncoderOnlyTransformer}


def build_model(cfg: ModelConfig) -> nn.Module:
    """A freshly initialised model of `cfg.architecture`."""
    return ARCHITECTURES[cfg.architecture](cfg)


def family_of_model(model: nn.Module) -> ModelFamily:
    """The attention family of one of our models."""
    return FAMILIES[model.cfg.architecture]
