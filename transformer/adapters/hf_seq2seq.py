"""`HFSeq2Seq`: a Hugging Face encoder-decoder (`transformers`, not our package `transformer`) behind the
`InspectableModel` interface, with eager attention so every weight is really there, and greedy decoding that
follows the model's generation config so it equals `generate(do_sample=False, num_beams=1)`."""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

from ..model import AttentionMaps, EncoderOutput, ForwardOutput, HeadMask, Insides, StepOutput
from .capture import complete, recording_residuals
from .hf_base import HFAdapter, attention_outputs, model_lock, token_ids
from .hf_capture import adopt
from .hf_head import fast_output_head
from .hf_load import DEFAULT_MAX_PARAMS, HFModelError, load_pretrained
from .interface import SourceText, padded_rows
from .residual_steps import check_encoder_layer, recording_calls

if TYPE_CHECKING:
    from transformers import PreTrainedModel  # its stubs are not followed (pyproject): Any to mypy

NO_POSITION_LIMIT = 512  # sources/targets of models with relative positions (T5)


def _in_width(proj: Any) -> int:
    """The input width of an output projection: nn.Linear's in_features, or GPT-2's Conv1D (weight (in, out))."""
    return proj.in_features if isinstance(proj, nn.Linear) else proj.weight.shape[0]


@contextmanager
def heads_off(model: PreTrainedModel, head_mask: HeadMask | None,
              outputs: Callable[[nn.Module], dict[str, list[nn.Module]]] | None = None) -> Iterator[None]:
    """Multiply each head's slice of every attention's output-projection input by `head_mask` (kind ->
    (layers, heads)) while inside; the hooks are removed in `finally`. Hold `model_lock(model)` around it.
    `outputs` finds the projections per kind and layer (by default where the model's architecture file places them)."""
    if not head_mask:
        yield
        return
    handles = []
    try:
        projections = (outputs or attention_outputs)(model)
        for kind, mask in head_mask.items():
            for layer, proj in enumerate(projections[kind]):
                scale = mask[layer].to(torch.float32).repeat_interleave(_in_width(proj) // mask.shape[1])

                def hook(module: nn.Module, args: tuple, scale: Tensor = scale) -> tuple:
                    return (args[0] * scale.to(args[0].dtype), *args[1:])

                handles.append(proj.register_forward_pre_hook(hook))
        yield
    finally:
        for handle in handles:
            handle.remove()


def logits_processors(gen: Any, eos: list[int], max_length: int, begin_index: int = 1) -> Any:
    """The generation config's rules that shape greedy output, as `generate` applies them."""
    from transformers.generation import (
        ForcedBOSTokenLogitsProcessor,
        ForcedEOSTokenLogitsProcessor,
        LogitsProcessorList,
        MinLengthLogitsProcessor,
        NoBadWordsLogitsProcessor,
        NoRepeatNGramLogitsProcessor,
        RepetitionPenaltyLogitsProcessor,
        SuppressTokensAtBeginLogitsProcessor,
        SuppressTokensLogitsProcessor,
    )
    out = LogitsProcessorList()
    if gen.repetition_penalty is not None and gen.repetition_penalty != 1.0:
        out.append(RepetitionPenaltyLogitsProcessor(gen.repetition_penalty))
    if gen.no_repeat_ngram_size:
        out.append(NoRepeatNGramLogitsProcessor(gen.no_repeat_ngram_size))
    if gen.bad_words_ids:
        out.append(NoBadWordsLogitsProcessor(gen.bad_words_ids, eos))
    if gen.min_length and eos:
        out.append(MinLengthLogitsProcessor(gen.min_length, eos))
    if gen.forced_bos_token_id is not None:
        out.append(ForcedBOSTokenLogitsProcessor(gen.forced_bos_token_id))
    if gen.forced_eos_token_id is not None:
        out.append(ForcedEOSTokenLogitsProcessor(max_length, gen.forced_eos_token_id))
    if gen.suppress_tokens:
        out.append(SuppressTokensLogitsProcessor(gen.suppress_tokens))
    if gen.begin_suppress_tokens:
        out.append(SuppressTokensAtBeginLogitsProcessor(gen.begin_suppress_tokens, begin_index))
    return out


class HFSeq2Seq(HFAdapter):
    """A pretrained Hugging Face encoder-decoder and its tokenizer; `prefix` is prepended to every source
    (T5 task prefixes such as "translate English to German: ")."""

    def __init__(self, model: PreTrainedModel, tokenizer: Any, name: str, prefix: str = "") -> None:
        self.model, self.tokenizer, self.name, self.prefix = model, tokenizer, name, prefix
        self.architecture = adopt(model, name)
        cfg, gen = model.config, model.generation_config
        self.generation_config = gen
        start = gen.decoder_start_token_id if gen.decoder_start_token_id is not None else cfg.decoder_start_token_id
        if start is None:
            raise HFModelError(f"{name} has no decoder_start_token_id in its config")
        self.start_ids = (int(start),)
        eos = token_ids(gen.eos_token_id) or token_ids(cfg.eos_token_id)
        self.end_ids = frozenset(eos)
        pad = gen.pad_token_id if gen.pad_token_id is not None else cfg.pad_token_id
        self.pad_id = int(pad) if pad is not None else -1
        bad = [tuple(int(i) for i in w) for w in (gen.bad_words_ids or []) if w and list(w) not in [[e] for e in eos]]
        single = [w[0] for w in bad if len(w) == 1]  # as generate: a lone end token is never banned
        self._banned_sequences = [w for w in bad if len(w) > 1]
        self.unemittable_ids = frozenset(int(i) for i in [*single, *(gen.suppress_tokens or [])])
        positions = getattr(cfg, "max_position_embeddings", None) or NO_POSITION_LIMIT
        self.max_source_len = self.max_target_len = int(positions)
        self.vocab_size = model.get_output_embeddings().weight.shape[0]
        self._lock = model_lock(model)
        self._n_tokens = len(tokenizer)
        self._processors: dict[int, Any] = {}

    @classmethod
    def load(cls, name: str, prefix: str = "", max_params: int = DEFAULT_MAX_PARAMS) -> "HFSeq2Seq":
        """Load a folder or hub id with every safety check of `hf_load`."""
        model, tokenizer, _ = load_pretrained(name, max_params)
        return cls(model, tokenizer, name, prefix)

    def describe(self) -> dict[str, Any]:
        """What a model card shows: type, sizes, vocabulary, parameters, prefix."""
        cfg = self.model.config
        heads = getattr(cfg, "decoder_attention_heads", None) or getattr(cfg, "num_heads", None)
        return {"source": "huggingface", "name": self.name, "model_type": cfg.model_type, "d_model": cfg.d_model,
                "n_heads": heads, "n_encoder_layers": len(self._stack("encoder")),
                "n_decoder_layers": self._decoder_layers(), "tgt_vocab_size": self.vocab_size,
                "parameters": sum(p.numel() for p in self.model.parameters()), "prefix": self.prefix}

    # -- tokens ------------------------------------------------------------------------------------------------
    def tokenize_source(self, text: str) -> SourceText:
        # verbose=False: an over-long input is measured here and refused with a clear InputError by the caller, so
        # the tokenizer's own "sequence length is longer than ..." log line would only be noise on the terminal
        ids = self.tokenizer(self.prefix + text, verbose=False).input_ids
        tokens = self.tokenizer.convert_ids_to_tokens(ids)
        unk = self.tokenizer.unk_token_id
        unknown = tuple(t for t, i in zip(tokens, ids, strict=True) if unk is not None and i == unk)
        return SourceText(tuple(ids), tuple(tokens), unknown, self.tokenizer.num_special_tokens_to_add())

    def target_ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text_target=text, add_special_tokens=False, verbose=False).input_ids)

    def default_max_steps(self, n_source: int) -> int:
        """As `generate`: the config's max_new_tokens, else its max_length less the start, else 20 new tokens."""
        gen = self.generation_config
        if gen.max_new_tokens:
            return int(gen.max_new_tokens)
        return max(1, int(gen.max_length) - len(self.start_ids)) if gen.max_length else 20

    # -- compute -----------------------------------------------------------------------------------------------
    def encode(self, src: Tensor, head_mask: HeadMask | None = None) -> EncoderOutput:
        mask = torch.ones_like(src)
        with self._lock, heads_off(self.model, head_mask):
            out = self.model.get_encoder()(input_ids=src, attention_mask=mask, output_attentions=True,
                                           return_dict=True)
        n = len(self._stack("encoder"))
        return EncoderOutput((out, mask), self._check("encoder", out.attentions, n))

    def encode_many(self, sources: Sequence[Sequence[int]]) -> EncoderOutput | None:
        """The sources padded to the longest, with the attention mask that hides the padding (and, passed on with the
        encoder's output, hides it from every decoder step's cross-attention)."""
        if self.family.cross_kind is None or self.family.prompt_in_decoder:
            return None
        longest = max(len(ids) for ids in sources)
        filler = max(self.pad_id, 0)
        src = torch.tensor([[*ids, *[filler] * (longest - len(ids))] for ids in sources])  # (B, S)
        mask = torch.tensor([[1] * len(ids) + [0] * (longest - len(ids)) for ids in sources])  # (B, S)
        with self._lock:
            out = self.model.get_encoder()(input_ids=src, attention_mask=mask, output_attentions=True,
                                           return_dict=True)
        return EncoderOutput((out, mask), self._check("encoder", out.attentions, len(self._stack("encoder"))))

    def start_cache(self, encoded: EncoderOutput) -> Any:
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache
        return EncoderDecoderCache(DynamicCache(), DynamicCache())

    def select_rows(self, encoded: EncoderOutput, cache: Any, rows: Tensor) -> tuple[EncoderOutput, Any]:
        """The encoder's states and mask of those rows; the cache (self- and cross-attention) reordered in place, as
        `generate`'s `_reorder_cache`."""
        enc, mask = encoded.state
        selected = type(enc)(last_hidden_state=enc.last_hidden_state.index_select(0, rows))
        cache.reorder_cache(rows)
        return EncoderOutput((selected, mask.index_select(0, rows)), encoded.encoder_self), cache

    def _stack(self, side: str) -> list[nn.Module]:
        return self.architecture.layers(self.model, side)

    def _decoder_layers(self) -> int:
        return len(self._stack("decoder"))

    def step(self, token: Tensor, encoded: EncoderOutput, cache: Any, head_mask: HeadMask | None = None
             ) -> StepOutput:
        enc, mask = encoded.state
        with self._lock, heads_off(self.model, head_mask), fast_output_head(self.model):
            out = self.model(encoder_outputs=enc, attention_mask=mask, decoder_input_ids=token, past_key_values=cache,
                             use_cache=True, output_attentions=True, return_dict=True)
        n = self._decoder_layers()
        return StepOutput(out.logits[:, -1], self._check("decoder self", out.decoder_attentions, n),
                          self._check("cross", out.cross_attentions, n))

    def forward(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None) -> ForwardOutput:
        with self._lock, heads_off(self.model, head_mask), fast_output_head(self.model):
            out = self.model(input_ids=src, attention_mask=torch.ones_like(src), decoder_input_ids=tgt,
                             output_attentions=True, return_dict=True)
        return ForwardOutput(out.logits, self._maps(out))

    def _maps(self, out: Any) -> AttentionMaps:
        n = self._decoder_layers()
        encoder = self._check("encoder", out.encoder_attentions, len(self._stack("encoder")))
        return AttentionMaps(encoder, self._check("decoder self", out.decoder_attentions, n),
                             self._check("cross", out.cross_attentions, n))

    def insides(self, src: Tensor, tgt: Tensor, head_mask: HeadMask | None = None,
                attention_mask: Tensor | None = None) -> Insides:
        """`attention_mask` (B, S): the source's real tokens (1) and padding (0) of a batch; None: all real."""
        stacks = {"encoder": self._stack("encoder"), "decoder": self._stack("decoder")}
        mask = torch.ones_like(src) if attention_mask is None else attention_mask
        with self.running(), heads_off(self.model, head_mask), \
                self.capturing() as found, \
                recording_residuals(stacks) as residual:
            out = self.model(input_ids=src, attention_mask=mask, decoder_input_ids=tgt, output_attentions=True,
                             return_dict=True)
        return Insides(out.logits, self._maps(out), complete(found, self.name),
                       {k: tuple(v) for k, v in residual.items()})

    def padded_insides(self, sources: Sequence[Sequence[int]]) -> Insides:
        """The sources padded as the tokenizer pads a batch, with the attention mask that hides the padding."""
        src, mask = padded_rows(sources, self.pad_id)
        return self.insides(src, torch.tensor([list(self.start_ids)] * len(sources)), attention_mask=mask)

    def output_head(self, residual: Tensor) -> Tensor:
        """The decoder's final norm where it has one (mBART's `layer_norm`, T5's `final_layer_norm`; BART and Marian
        are post-norm), T5's rescaling before its tied projection, the projection and BART's `final_logits_bias`."""
        norm = self.architecture.final_norm(self.model, "decoder")
        hidden = norm(residual) if norm is not None else residual
        if getattr(self.model.config, "scale_decoder_outputs", False):  # T5 with tied embeddings; mT5 never rescales
            hidden = hidden * self.model.model_dim ** -0.5
        logits = self.model.get_output_embeddings()(hidden)
        bias = getattr(self.model, "final_logits_bias", None)
        return logits if bias is None else logits + bias

    def residual_layers(self) -> dict[str, list[nn.Module]]:
        return {"encoder": self._stack("encoder"), "decoder": self._stack("decoder")}

    def encoder_final_norm(self, residual: Tensor) -> Tensor:
        """The encoder's final norm where it has one (mBART's `layer_norm`, T5's RMS `final_layer_norm`; BART and
        Marian are post-norm: as is)."""
        norm = self.architecture.final_norm(self.model, "encoder")
        return norm(residual) if norm is not None else residual

    def encode_at(self, src: Tensor, layer: int, head_mask: HeadMask | None = None) -> EncoderOutput:
        encoder, layers = self.model.get_encoder(), self._stack("encoder")
        check_encoder_layer(layer, len(layers), self.name)
        mask = torch.ones_like(src)
        with self._lock, heads_off(self.model, head_mask), recording_calls({"encoder": layers}) as found:
            out = encoder(input_ids=src, attention_mask=mask, output_attentions=True, return_dict=True)
            hidden = self.encoder_final_norm(found["encoder"][-1][layer])
        read = type(out)(last_hidden_state=hidden, attentions=out.attentions)
        return EncoderOutput((read, mask), self._check("encoder", out.attentions, len(layers)))

    def constrain(self, decoder_ids: Sequence[int], logits: Tensor, max_length: int) -> Tensor:
        processors = self._processors.get(max_length)
        if processors is None:  # stateless: built once per length limit
            processors = self._processors[max_length] = logits_processors(self.generation_config,
                                                                           sorted(self.end_ids), max_length)
        if not processors:
            return logits
        return processors(torch.tensor([list(decoder_ids)], dtype=torch.long), logits[None].clone())[0]

    # -- heads and gradients -------------------------------------------------------------------------------------
    def head_counts(self) -> dict[str, tuple[int, int]]:
        cfg = self.model.config
        enc = getattr(cfg, "encoder_attention_heads", None) or cfg.num_heads
        dec = getattr(cfg, "decoder_attention_heads", None) or cfg.num_heads
        n_enc, n_dec = len(self._stack("encoder")), self._decoder_layers()
        return {"encoder_self": (n_enc, int(enc)), "decoder_self": (n_dec, int(dec)), "cross": (n_dec, int(dec))}

    def embedding_paths(self) -> tuple[str, str]:
        return self.architecture.token_path(self.model, "encoder"), self.architecture.token_path(self.model, "decoder")

    def teacher_logits(self, network: nn.Module, src: Tensor, tgt: Tensor) -> Tensor:
        return network(input_ids=src, attention_mask=torch.ones_like(src), decoder_input_ids=tgt, use_cache=False,
                       return_dict=True).logits

    def translate(self, texts: Sequence[str]) -> list[str]:
        batch = self.tokenizer([self.prefix + t for t in texts], return_tensors="pt", padding=True, truncation=True,
                               max_length=self.max_source_len)
        with self.running():
            out = self.model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=self.default_max_steps(0))
        return self.tokenizer.batch_decode(out, skip_special_tokens=True)
