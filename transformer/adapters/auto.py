"""Which adapter a loaded model gets (as `AutoModelFor...` picks a class for a config): the one place that names
the adapter classes. Our encoder-decoder as `NativeSeq2Seq`, our decoder-only model as `NativeDecoderOnly`, our
encoder-only masked LM as `NativeEncoderOnly`;
Hugging Face encoder-decoders as `HFSeq2Seq`, causal language models as `HFCausalLM`, encoder-only masked language
models (BERT, RoBERTa, DistilBERT, ModernBERT) as `HFMaskedLM`; anything else is refused by name in `hf_load`."""
from __future__ import annotations

from typing import Any

from torch import nn

from .hf_causal import HFCausalLM
from .hf_load import DEFAULT_MAX_PARAMS, hf_kind, read_config, resolve
from .hf_masked import HFMaskedLM
from .hf_seq2seq import HFSeq2Seq
from .interface import InspectableModel
from .native import NativeSeq2Seq
from .native_causal import NativeDecoderOnly
from .native_masked import NativeEncoderOnly

HF_ADAPTERS = {"seq2seq": HFSeq2Seq, "causal": HFCausalLM, "masked": HFMaskedLM}
NATIVE_ADAPTERS = {"encoder-decoder": NativeSeq2Seq, "decoder-only": NativeDecoderOnly,
                   "encoder-only": NativeEncoderOnly}


def adapter_for(network: nn.Module, tokenizer: Any, target_tokenizer: Any = None, *, name: str = "checkpoint",
                prefix: str = "", chat: bool = False) -> InspectableModel:
    """The adapter over a loaded model: ours (`network.cfg.architecture`; `tokenizer` reads the source,
    `target_tokenizer` writes the output) or a Hugging Face one (its config's `is_encoder_decoder`; `prefix` for an
    encoder-decoder's task prefix, `chat` for a causal model's chat template)."""
    config = getattr(network, "config", None)
    if config is None:  # ours: a `ModelConfig` on `cfg`
        adapter = NATIVE_ADAPTERS[getattr(network.cfg, "architecture", "encoder-decoder")]
        return adapter(network, tokenizer, target_tokenizer if target_tokenizer is not None else tokenizer, name)
    if getattr(config, "is_encoder_decoder", False):
        return HFSeq2Seq(network, tokenizer, name, prefix)
    if hf_kind({"model_type": getattr(config, "model_type", "")}) == "masked":
        return HFMaskedLM(network, tokenizer, name)
    return HFCausalLM(network, tokenizer, name, chat)


def load_hf_model(name: str, *, prefix: str = "", chat: bool = False, max_params: int = DEFAULT_MAX_PARAMS
                  ) -> InspectableModel:
    """The folder or hub id behind the adapter of its kind; `prefix` is for encoder-decoders (T5 task prefixes),
    `chat` for causal language models (format the prompt with the tokenizer's chat template)."""
    kind = hf_kind(read_config(resolve(name)))
    if kind == "causal":
        return HFCausalLM.load(name, max_params=max_params, chat=chat)
    if kind == "masked":
        return HFMaskedLM.load(name, max_params=max_params)
    return HF_ADAPTERS[kind].load(name, prefix=prefix, max_params=max_params)
