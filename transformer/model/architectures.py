"""Our architectures by name (the model config's `architecture`): the one place that picks the module class."""
from __future__ import annotations

from .config import ModelConfig
from .decoder_only import DecoderOnlyTransformer
from .encoder_decoder import Seq2SeqTransformer
from .encoder_only import EncoderOnlyTransformer
from .families import FAMILIES, ModelFamily

Network = Seq2SeqTransformer | DecoderOnlyTransformer | EncoderOnlyTransformer  # one of our models
ARCHITECTURES: dict[str, type[Network]] = {"encoder-decoder": Seq2SeqTransformer,
                                           "decoder-only": DecoderOnlyTransformer,
                                           "encoder-only": EncoderOnlyTransformer}


def build_model(cfg: ModelConfig) -> Network:
    """A freshly initialised model of `cfg.architecture`."""
    return ARCHITECTURES[cfg.architecture](cfg)


def family_of_model(model: Network) -> ModelFamily:
    """The attention family of one of our models."""
    return FAMILIES[model.cfg.architecture]
