"""Which adapter a loaded model gets (as `AutoModelFor...` picks a class for a config): the one place that names
the adapter classes, by family ("encoder-decoder", "decoder-only", "encoder-only", the names of
`transformer/model/families.py` and of the trace JSON). Ours: `NativeSeq2Seq`, `NativeDecoderOnly`,
`NativeEncoderOnly` (on `NativeAdapter`); Hugging Face's: `HFSeq2Seq` (Marian, BART, T5...), `HFCausalLM` (GPT-2,
Llama, Qwen2, Mistral, Gemma, Phi-3, OLMo, GPT-NeoX, Falcon), `HFMaskedLM` (BERT, RoBERTa, DistilBERT, ModernBERT)
(on `HFAdapter`), each reading its model through the model type's architecture file (`architectures/`); anything
else is refused by name in `hf_load`."""
from __future__ import annotations

from typing import Any

from torch import nn

from ..data import answer_steps
from .architectures import architecture_of
from .hf_causal import HFCausalLM
from .hf_load import DEFAULT_MAX_PARAMS, hf_family, read_config, resolve
from .hf_masked import HFMaskedLM
from .hf_seq2seq import HFSeq2Seq
from .interface import InspectableModel
from .native import NativeSeq2Seq
from .native_causal import NativeDecoderOnly
from .native_masked import NativeEncoderOnly

NATIVE_ADAPTERS = {"encoder-decoder": NativeSeq2Seq, "decoder-only": NativeDecoderOnly,
                   "encoder-only": NativeEncoderOnly}


def adapter_for(network: nn.Module, tokenizer: Any, target_tokenizer: Any = None, *, name: str = "checkpoint",
                prefix: str = "", chat: bool = False, task: object = None) -> InspectableModel:
    """The adapter over a loaded model: ours (its family is `network.cfg.architecture`; `tokenizer` reads the source,
    `target_tokenizer` writes the output; `task`, the name of the task it was trained on, sets how many tokens a
    decode gives by default: `data.answer_steps`) or a Hugging Face one (its config's family; `prefix` for an
    encoder-decoder's task prefix, `chat` for a decoder-only model's chat template)."""
    config = getattr(network, "config", None)
    if config is None:  # ours: a `ModelConfig` on `cfg`
        cls = NATIVE_ADAPTERS[getattr(network.cfg, "architecture", "encoder-decoder")]
        return cls(network, tokenizer, target_tokenizer if target_tokenizer is not None else tokenizer, name,
                   answer_steps=answer_steps(task))
    family = architecture_of(network, name).family  # refused in one line without an architecture file
    if family == "encoder-decoder":
        return HFSeq2Seq(network, tokenizer, name, prefix)
    if family == "encoder-only":
        return HFMaskedLM(network, tokenizer, name)
    return HFCausalLM(network, tokenizer, name, chat)


def load_hf_model(name: str, *, prefix: str = "", chat: bool = False, max_params: int = DEFAULT_MAX_PARAMS
                  ) -> InspectableModel:
    """The folder or hub id behind the adapter of its family; `prefix` is for encoder-decoders (T5 task prefixes),
    `chat` for decoder-only models (format the prompt with the tokenizer's chat template)."""
    family = hf_family(read_config(resolve(name)))
    if family == "decoder-only":
        return HFCausalLM.load(name, max_params=max_params, chat=chat)
    if family == "encoder-only":
        return HFMaskedLM.load(name, max_params=max_params)
    return HFSeq2Seq.load(name, prefix=prefix, max_params=max_params)
