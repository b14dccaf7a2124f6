"""Which adapter opens a Hugging Face folder or hub id (as `AutoModelFor...` picks a class): encoder-decoders
as `HFSeq2Seq`, causal language models as `HFCausalLM`; anything else is refused by name in `hf_load`."""
from __future__ import annotations

from .hf_causal import HFCausalLM
from .hf_load import DEFAULT_MAX_PARAMS, hf_kind, read_config, resolve
from .hf_seq2seq import HFSeq2Seq
from .interface import InspectableSeq2Seq

HF_ADAPTERS = {"seq2seq": HFSeq2Seq, "causal": HFCausalLM}


def load_hf_model(name: str, *, prefix: str = "", chat: bool = False, max_params: int = DEFAULT_MAX_PARAMS
                  ) -> InspectableSeq2Seq:
    """The folder or hub id behind the adapter of its kind; `prefix` is for encoder-decoders (T5 task prefixes),
    `chat` for causal language models (format the prompt with the tokenizer's chat template)."""
    kind = hf_kind(read_config(resolve(name)))
    if kind == "causal":
        return HFCausalLM.load(name, max_params=max_params, chat=chat)
    return HF_ADAPTERS[kind].load(name, prefix=prefix, max_params=max_params)
