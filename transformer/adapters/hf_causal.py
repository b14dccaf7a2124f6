"""`HFCausalLM`: a Hugging Face decoder-only language model (GPT-2, Llama, Qwen2, Mistral, Gemma...) behind the same
interface as the encoder-decoders, with eager attention so every weight is really there, and greedy decoding that
follows the model's generation config so it equals `generate(do_sample=False, num_beams=1)`.

The prompt is the model's "source" and also its first decoder inputs: a decode runs the prompt through the model
once (`prefill`, one matrix of prompt x prompt weights), then feeds each chosen token (one row per step), so the
trace holds one causal self-attention matrix over the prompt and the generated tokens.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import torch
from torch import Tensor, nn

from ..model import DECODER_ONLY, AttentionMaps, EncoderOutput, ForwardOutput, HeadMask, Insides, StepOutput
from .capture import complete, recording_residuals
from .hf_base import HFAdapter, model_lock, token_ids
from .hf_capture import adopt
from .hf_head import fast_output_head
from .hf_load import DEFAULT_MAX_PARAMS, HFModelError, load_pretrained
from .hf_seq2seq import heads_off, logits_processors
from .interface import SourceText, padded_rows
from .store_forward import StoreChunks

if TYPE_CHECKING:
    from transformers import PreTrainedModel  # its stubs are not followed (pyproject): Any to mypy

NO_CONTEXT_LIMIT = 2048  # the context of a model whose config does not say


def _config_int(cfg: Any, *names: str) -> int | None:
    for name in names:
        value = getattr(cfg, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


class HFCausalLM(HFAdapter):
    """A pretrained Hugging Face causal language model and its tokenizer; with `chat`, the prompt is formatted by
    the tokenizer's chat template (one user turn and the assistant's opening), its tokens shown as tokens."""

    family = DECODER_ONLY
    start_ids: tuple[int, ...] = ()

    def __init__(self, model: PreTrainedModel, tokenizer: Any, name: str, chat: bool = False) -> None:
        self.model, self.tokenizer, self.name, self.prefix, self.chat = model, tokenizer, name, "", chat
        self.architecture = adopt(model, name)
        cfg, gen = model.config, model.generation_config
        self.generation_config = gen
        if chat and not self.has_chat_template(tokenizer):
            raise HFModelError(f"{name}'s tokenizer has no chat template: it cannot format the prompt as chat")
        eos = token_ids(gen.eos_token_id) or token_ids(cfg.eos_token_id)
        self.end_ids = frozenset(eos)
        pad = gen.pad_token_id if gen.pad_token_id is not None else cfg.pad_token_id
        self.pad_id = int(pad) if pad is not None else -1
        bad = [tuple(int(i) for i in w) for w in (gen.bad_words_ids or []) if w and list(w) not in [[e] for e in eos]]
        self._banned_sequences = [w for w in bad if len(w) > 1]
        self.unemittable_ids = frozenset(int(i) for i in [*(w[0] for w in bad if len(w) == 1),
                                                          *(gen.suppress_tokens or [])])
        self.context = _config_int(cfg, "max_position_embeddings", "n_positions", "n_ctx") or NO_CONTEXT_LIMIT
        self.max_source_len = self.max_target_len = self.context  # the model's own: prompt and output together
        n_heads = _config_int(cfg, "num_attention_heads", "n_head")
        if n_heads is None:
            raise HFModelError(f"{name}: its config gives no number of attention heads (num_attention_heads, n_head)")
        self.n_heads = n_heads
        self.n_kv_heads = self.architecture.n_kv_heads(model)
        self.n_layers = len(self._layers())
        self.vocab_size = model.get_output_embeddings().weight.shape[0]
        self._lock = model_lock(model)
        self._n_tokens = len(tokenizer)
        self._processors: dict[tuple[int, int], Any] = {}

    @staticmethod
    def has_chat_template(tokenizer: Any) -> bool:
        """Whether the tokenizer can format a prompt as chat (the app's "format as chat" switch)."""
        return bool(getattr(tokenizer, "chat_template", None))

    @classmethod
    def load(cls, name: str, prefix: str = "", max_params: int = DEFAULT_MAX_PARAMS, chat: bool = False
             ) -> "HFCausalLM":
        """Load a folder or hub id with every safety check of `hf_load` (`prefix` is for encoder-decoders only)."""
        model, tokenizer, _ = load_pretrained(name, max_params, families=("decoder-only",))
        return cls(model, tokenizer, name, chat)

    def describe(self) -> dict[str, Any]:
        cfg = self.model.config
        return {"source": "huggingface", "name": self.name, "model_type": cfg.model_type, "family": self.family.name,
                "d_model": _config_int(cfg, "hidden_size", "n_embd", "d_model"), "n_heads": self.n_heads,
                "n_kv_heads": self.n_kv_heads, "n_layers": self.n_layers, "context": self.context,
                "tgt_vocab_size": self.vocab_size, "parameters": sum(p.numel() for p in self.model.parameters()),
                "chat": self.chat}

    # -- tokens ------------------------------------------------------------------------------------------------
    def tokenize_source(self, text: str) -> SourceText:
        if self.chat:
            ids = self.tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                                     tokenize=True, return_dict=False)
            ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        else:
            ids = list(self.tokenizer(text).input_ids)
        tokens = self.tokenizer.convert_ids_to_tokens(ids)
        unk = self.tokenizer.unk_token_id
        unknown = tuple(t for t, i in zip(tokens, ids, strict=True) if unk is not None and i == unk)
        special = set(self.tokenizer.all_special_ids)
        return SourceText(tuple(int(i) for i in ids), tuple(tokens), unknown, sum(i in special for i in ids))

    def target_ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def decoder_prefix(self, source: SourceText) -> list[int]:
        return list(source.ids)

    def default_max_steps(self, n_source: int) -> int:
        """As `generate`: the config's max_new_tokens, else its max_length less the prompt, at least 1."""
        gen = self.generation_config
        if gen.max_new_tokens:
            return int(gen.max_new_tokens)
        return max(1, int(gen.max_length or 20) - n_source)

    # -- compute -----------------------------------------------------------------------------------------------
    def encode(self, src: Tensor, head_mask: HeadMask | None = None) -> EncoderOutput:
        return EncoderOutput(None, ())  # no encoder: the prompt goes through the decoder (`prefill`)

    def start_cache(self, encoded: EncoderOutput) -> Any:
        from transformers.cache_utils import DynamicCache
        return DynamicCache()

    def select_rows(self, encoded: EncoderOutput, cache: Any, rows: Tensor) -> tuple[EncoderOutput, Any]:
        cache.reorder_cache(rows)  # in place, as `generate`'s `_reorder_cache`
        return encoded, cache

    def _layers(self) -> list[nn.Module]:
        return self.architecture.layers(self.model, "decoder")

    def _run(self, ids: Tensor, cache: Any, head_mask: HeadMask | None) -> Any:
        with self._lock, heads_off(self.model, head_mask), fast_output_head(self.model):
            return self.model(input_ids=ids, past_key_values=cache, use_cache=cache is not None,
                              output_attentions=True, return_dict=True)

    def prefill(self, ids: Sequence[int], encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
                ) -> StepOutput:
        out = self._run(torch.tensor([list(ids)]), cache, head_mask)
        return StepOutput(out.logits[:, -1], self._check("self", out.attentions, self.n_layers), ())

    def step(self, token: Tensor, encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
             ) -> StepOutput:
        out = self._run(token, cache, head_mask)
        return StepOutput(out.logits[:, -1], self._check("self", out.attentions, self.n_layers), ())

    def forward(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None) -> ForwardOutput:
        """Teacher forcing: `tgt` is the whole sequence (prompt and continuation); `src` is not read."""
        out = self._run(tgt, None, head_mask)
        return ForwardOutput(out.logits, AttentionMaps(by_kind={"self": self._check("self", out.attentions,
                                                                                    self.n_layers)}))

    def insides(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None,
                attention_mask: Tensor | None = None) -> Insides:
        """`tgt` is the whole sequence (prompt and continuation); `src` is not read; `attention_mask` (B, T): a batch's
        real tokens (1) and padding (0), None: all real."""
        layers = self._layers()
        with self.running(), heads_off(self.model, head_mask), self.capturing() as found, \
                recording_residuals({"decoder": layers}) as residual:
            out = self.model(input_ids=tgt, attention_mask=attention_mask, output_attentions=True, return_dict=True)
        maps = AttentionMaps(by_kind={"self": self._check("self", out.attentions, self.n_layers)})
        return Insides(out.logits, maps, complete(found, self.name), {k: tuple(v) for k, v in residual.items()})

    def padded_insides(self, sources: Sequence[Sequence[int]]) -> Insides:
        """The prompts padded on the right, as a tokenizer pads a batch, with the attention mask that hides the
        padding (combined with the causal mask by the model)."""
        ids, mask = padded_rows(sources, self.pad_id)
        return self.insides(ids, ids, attention_mask=mask)

    def store_feed(self, ids: Tensor, cache: Any, chunks: dict[str, list[StoreChunks]], n_source: int = 0
                   ) -> Tensor:
        """The fused path on the model's device (the ids go there; the logits and the store come back to the CPU)."""
        device = next(self.model.parameters()).device
        with torch.no_grad(), self._lock, self.capturing(chunks):
            out = self.model(input_ids=ids.to(device), past_key_values=cache, use_cache=True, logits_to_keep=1,
                             return_dict=True)
        return out.logits[:, -1].cpu()

    def feed_logits(self, ids: Tensor, cache: Any, n_source: int = 0) -> Tensor:
        return self.model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits[:, -1]

    def output_head(self, residual: Tensor) -> Tensor:
        """The final norm (GPT-2's `ln_f`, Llama's and Qwen2's RMSNorm `norm`), the output projection and, where the
        model soft-caps its logits (Gemma 2's `final_logit_softcapping`), cap * tanh(logits / cap)."""
        norm = self.architecture.final_norm(self.model, "decoder")
        logits = self.model.get_output_embeddings()(norm(residual) if norm is not None else residual)
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        return logits if not cap else torch.tanh(logits / cap) * cap

    def residual_layers(self) -> dict[str, list[nn.Module]]:
        return {"decoder": self._layers()}

    def encoder_final_norm(self, residual: Tensor) -> Tensor:
        raise ValueError(f"{self.name} has no encoder")

    def encode_at(self, src: Tensor, layer: int, head_mask: HeadMask | None = None) -> EncoderOutput:
        raise ValueError(f"{self.name} has no encoder")

    def constrain(self, decoder_ids: Sequence[int], logits: Tensor, max_length: int) -> Tensor:
        key = (max_length, len(decoder_ids) if self.generation_config.begin_suppress_tokens else 0)
        processors = self._processors.get(key)
        if processors is None:
            processors = self._processors[key] = logits_processors(self.generation_config, sorted(self.end_ids),
                                                                    max_length, begin_index=max(key[1], 1))
        if not processors:
            return logits
        return processors(torch.tensor([list(decoder_ids)], dtype=torch.long), logits[None].clone())[0]

    # -- heads and gradients -------------------------------------------------------------------------------------
    def head_counts(self) -> dict[str, tuple[int, int]]:
        return {"self": (self.n_layers, int(self.n_heads))}

    def head_groups(self) -> dict[str, tuple[int, ...]]:
        per_group = self.n_heads // self.n_kv_heads
        return {"self": tuple(h // per_group for h in range(self.n_heads))}

    def embedding_paths(self) -> tuple[str, str]:
        """No separate source embedding (""), and the token embedding every input goes through."""
        names = {id(m): name for name, m in self.model.named_modules()}
        return "", names[id(self.model.get_input_embeddings())]

    def teacher_logits(self, network: nn.Module, src: Tensor, tgt: Tensor) -> Tensor:
        return network(input_ids=tgt, use_cache=False, return_dict=True).logits

    def translate(self, texts: Sequence[str]) -> list[str]:
        """Greedy continuations, one prompt at a time (no padding: positions stay those of one prompt)."""
        out = []
        with self.running():
            for text in texts:
                ids = torch.tensor([self.tokenize_source(text).ids[: self.max_source_len - 1]])
                gen = self.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                                          max_new_tokens=min(self.default_max_steps(ids.shape[1]),
                                                             self.max_target_len - ids.shape[1]))
                out.append(self.tokenizer.decode(gen[0, ids.shape[1]:], skip_special_tokens=True))
        return out
