"""Greedy and teacher-forced decoding of any `InspectableModel`, producing a DecodeResult with its trace.
`greedy_decode` is the one greedy entry at every length: its `keep` says whether the trace holds the maps or the
attention store (`keep.py`), and one step loop (`loop.py`, which a batch of decodes shares) serves both."""
from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Sequence

import torch
from torch import Tensor

from ..adapters import InspectableModel, SourceText, adapter_for
from ..data import Tokenizer
from ..model import EncoderOutput, HeadMask, Seq2SeqTransformer
from .errors import InputError
from .keep import STORED_STEPS, keeps_store
from .loop import DecodeRow, MapsFeed, Step, candidates, run_rows, step_limit
from .residuals import ResidualRecorder, Residuals
from .sampling import SampledStep, Sampler, Sampling, SamplingError, check_sampling
from .sinks import hidden_dict
from .stored import StoreFeed
from .trace import TRACE_FORMAT_VERSION, AttentionTrace

MAX_INPUT_CHARS = 10_000  # what a one-line box and a link carry themselves; longer text: a document box, a link by hash
CHARS_PER_TOKEN = 32  # a text longer than this many characters per token of the context cannot fit it (derived bound)


@dataclass(frozen=True)
class DecodeResult:
    """Output of greedy (or teacher-forced) decoding plus the attention trace the model produced."""

    source_text: str
    steps: tuple[Step, ...]
    trace: AttentionTrace
    mode: str  # "greedy" or "teacher-forced"
    finished: bool  # the model produced </s> within the step limit
    output_text: str
    unknown_tokens: tuple[str, ...] = field(default=())
    residuals: Residuals | None = field(default=None, repr=False)  # the logit lens's input (`residuals=True`)
    encoder_layer: int | None = None  # the DecoderLens: the encoder layer the decoder read (None: its output)
    sampling: Sampling | None = None  # how a "sampled" decode drew its tokens
    samples: tuple[SampledStep | None, ...] = ()  # per step what it was drawn from (None: a forced step)

    @property
    def output_tokens(self) -> tuple[str, ...]:
        return tuple(s.token for s in self.steps)

    def to_dict(self, attention: bool = True) -> dict:
        """The trace JSON (docs/formats.md, "Trace JSON"); read back by `result_from_dict`. `attention=False` leaves
        the weights out (they are then in a store side file: `save_trace_json`)."""
        return {
            "format_version": TRACE_FORMAT_VERSION,
            "family": self.trace.family_name,
            "kinds": list(self.trace.kinds),
            "step_offset": self.trace.step_offset,
            "head_groups": {k: list(v) for k, v in self.trace.head_groups.items()},
            "source_text": self.source_text,
            "mode": self.mode,
            "finished": self.finished,
            "source_tokens": list(self.trace.source_tokens),
            "target_tokens": list(self.trace.decoder_input_tokens),
            "output_tokens": list(self.output_tokens),
            "steps": [{"token": s.token, "token_id": s.token_id, "prob": s.prob, "forced": s.forced,
                       "top_k": [[t, p] for t, p in s.top_k]} for s in self.steps],
            **({"attention": self.trace.attention_dict()} if attention else {}),
            **({"hidden_keys": hidden_dict(self.trace)} if self.trace.hidden_source or self.trace.hidden_target
               else {}),
            **({"encoder_layer": self.encoder_layer} if self.encoder_layer is not None else {}),
            **({"sampling": {**self.sampling.to_dict(), "steps": [None if s is None else s.to_dict()
                                                                  for s in self.samples]}}
               if self.sampling is not None else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


def fit_input(text: str, limit: int = MAX_INPUT_CHARS) -> tuple[str, str | None]:
    """Text for a box that holds at most `limit` characters: (the text, None) when it fits, else (its first `limit`
    characters, the message that says so)."""
    if len(text) <= limit:
        return text, None
    return text[:limit], (f"The pasted text has {len(text):,} characters; the first {limit:,} are kept (the limit "
                          f"is {limit:,}).")


def char_limit(adapter: InspectableModel) -> int:
    """The most characters a text `adapter` can read may have: its own context in tokens × CHARS_PER_TOKEN (a bound
    derived from the model's, checked before tokenizing; the tokens are checked against the context itself)."""
    return int(adapter.max_source_len) * CHARS_PER_TOKEN


def _check_text(text: str, adapter: InspectableModel) -> None:
    if not isinstance(text, str) or not text.strip():
        raise InputError("The input is empty: type a sentence to decode.")
    if len(text) > char_limit(adapter):
        raise InputError(f"The input has {len(text):,} characters; this model reads at most {adapter.max_source_len:,} "
                         f"tokens (its own context), so at most {char_limit(adapter):,} characters.")


def read_source(adapter: InspectableModel, text: str) -> SourceText:
    """The source as `adapter` reads it; raises InputError for empty, unreadable or too long text (longer than the
    model's own context)."""
    _check_text(text, adapter)
    return _check_source(adapter, adapter.tokenize_source(text))


def _check_source(adapter: InspectableModel, source: SourceText) -> SourceText:
    """`source` if the model can read it; InputError when it has no tokens or more than the model's context."""
    if not source.ids:
        raise InputError("The input has no tokens this model can read.")
    if len(source.ids) > adapter.max_source_len:
        n = source.n_specials
        raise InputError(f"The input has {len(source.ids) - n:,} tokens; this model reads at most "
                         f"{adapter.max_source_len - n:,} tokens (its own context).")
    return source


def encode_source(model: Seq2SeqTransformer, tokenizer: Tokenizer, text: str) -> tuple[list[int], list[str]]:
    """Source ids (with </s>) for `text`, and the tokens the vocabulary does not know; raises InputError."""
    source = read_source(adapter_for(model, tokenizer), text)
    return list(source.ids), list(source.unknown)


def _top_k(probs: Tensor, k: int, adapter: InspectableModel) -> tuple[tuple[str, float], ...]:
    return tuple((adapter.id_to_token(t), v) for t, v in candidates(probs, k))


def _forced_ids(adapter: InspectableModel, tokens: Sequence[str] | str) -> list[int]:
    """Target ids of forced tokens; raises InputError for a piece the model cannot output."""
    if isinstance(tokens, str):
        ids = adapter.target_ids(tokens) if tokens else []
    else:
        ids = []
        for t in tokens:
            i = adapter.token_to_id(t)
            if i is None:
                raise InputError(f"{t!r} is not in this model's output vocabulary and cannot be forced.")
            ids.append(i)
    for i in ids:
        if i in adapter.unemittable_ids:
            raise InputError(f"{adapter.id_to_token(i)!r} is a special token the model never outputs; it cannot be "
                             "forced.")
    return ids


def greedy_decode(adapter: InspectableModel, text: str | SourceText, *, top_k: int = 5, max_steps: int | None = None,
                  forced: Sequence[str] | str = (), stop_at_end: bool = True,
                  head_mask: HeadMask | None = None, residuals: bool = False,
                  encoder_layer: int | None = None, sampling: Sampling | None = None,
                  keep: str = "auto") -> DecodeResult:
    """Greedy decoding of any `InspectableModel` with its cache and a full trace; `forced` tokens come first.

    Probabilities are renormalised over what the model can emit at that step (`constrain`). A step is marked
    forced when the user forced it or when the model's own rules leave one choice (e.g. a forced BOS/EOS).
    `residuals` records the decoder's residual stream at each step (the logit lens, `analysis.lens`);
    `encoder_layer` lets an encoder-decoder's decoder read that encoder layer instead of the last (DecoderLens).
    `sampling` draws each step with temperature, top-k and top-p from a seeded generator (`sampling.py`; temperature
    0: greedy); the result's mode is then "sampled" and `samples` says what each step was drawn from.
    `keep`: "maps" (every weight), "store" (the attention store: a decoder-only model's long prompt, up to its own
    context, with no n × n tensor; by default at most STORED_STEPS steps) or "auto" (`keeps_store`: the store past
    STORE_ABOVE prompt tokens). The tokens are the same either way. `text` may be a `SourceText` already read (ids
    no text gives, as a benchmark's random prompt); the result's `source_text` is then empty.
    """
    sampler = _sampler(adapter, sampling)
    source = _check_source(adapter, text) if isinstance(text, SourceText) else read_source(adapter, text)
    forced_ids = _forced_ids(adapter, forced)
    start = adapter.decoder_prefix(source)
    stored = keeps_store(adapter, len(start), keep)
    if stored and (head_mask is not None or encoder_layer is not None):
        raise InputError(f"{'Switching heads off' if head_mask is not None else 'The DecoderLens'} needs the maps: "
                         f"this decode of {len(start):,} prompt tokens keeps the attention store (keep='maps' makes "
                         "the n × n maps).")
    # as the model's own generate, at most STORED_STEPS stored; room for the forced tokens and one more
    n_max = max(step_limit(adapter, len(source.ids), len(start), max_steps, STORED_STEPS if stored else None),
                step_limit(adapter, len(source.ids), len(start), len(forced_ids) + 1))
    recorder = ResidualRecorder(adapter, last_only=stored) if residuals else None
    row = DecodeRow(adapter, source, list(start), n_max, top_k, forced_ids, stop_at_end, sampler, recorder)
    with adapter.running(), ExitStack() as recording:
        encoded = _encode(adapter, torch.tensor([source.ids]), head_mask, encoder_layer)
        cache = adapter.start_cache(encoded)
        feed = (StoreFeed(adapter, cache, start, len(source.ids)) if stored
                else MapsFeed(adapter, encoded, cache, start, head_mask))
        if recorder is not None:
            recording.enter_context(recorder.recording(cache))
        run_rows([row], feed)
    steps = row.steps
    labels = [*adapter.prefix_tokens(source), *adapter.ids_to_tokens(row.inputs[len(start):])]  # every decoder input
    trace = feed.trace(source.tokens, labels, len(start) - 1)
    text_out = adapter.detokenize([s.token_id for s in steps])
    return DecodeResult(text if isinstance(text, str) else "", tuple(steps), trace,
                        "greedy" if sampler is None else "sampled", row.finished, text_out,
                        source.unknown, recorder.result() if recorder is not None else None, encoder_layer,
                        None if sampler is None else sampler.sampling, () if sampler is None else tuple(row.samples))


def _sampler(adapter: InspectableModel, sampling: Sampling | None) -> Sampler | None:
    """A seeded sampler for the settings, None for greedy ones; InputError for settings out of range."""
    if sampling is None:
        return None
    try:
        check_sampling(sampling, adapter.vocab_size)
    except SamplingError as exc:
        raise InputError(str(exc)) from None
    return None if sampling.greedy else Sampler(sampling)


def _encode(adapter: InspectableModel, src: torch.Tensor, head_mask: HeadMask | None, encoder_layer: int | None
            ) -> EncoderOutput:
    """The encoder's output, or with `encoder_layer` that layer's residual as the decoder reads it (DecoderLens)."""
    if encoder_layer is None:
        return adapter.encode(src, head_mask)
    if adapter.family.encoder_kind is None or adapter.family.decoder_kind is None:
        raise InputError(f"{adapter.name} has no encoder: the decoder cannot read an earlier encoder layer.")
    n = adapter.head_counts()[adapter.family.encoder_kind][0]
    if isinstance(encoder_layer, bool) or not isinstance(encoder_layer, int) or not 0 <= encoder_layer <= n:
        raise InputError(f"The encoder has layers 1 to {n}: the decoder can read layer 0 (the embeddings) to {n}, "
                         f"not {encoder_layer!r}.")
    return adapter.encode_at(src, encoder_layer, head_mask)


def teacher_forced(adapter: InspectableModel, text: str, reference: str, *, top_k: int = 5,
                   head_mask: HeadMask | None = None, residuals: bool = False) -> DecodeResult:
    """One forward pass on the reference target: the decoder axis shows the reference, steps the predictions.
    `residuals`: the pass is `adapter.insides`, and the decoder's residual stream at each prediction is kept (the
    lens)."""
    source = read_source(adapter, text)
    ref = adapter.target_ids(reference) if reference else []
    start = adapter.decoder_prefix(source)
    if len(ref) + len(start) > adapter.max_target_len:
        raise InputError(f"The reference has {len(ref):,} tokens; this model reads at most "
                         f"{adapter.max_target_len - len(start)}.")
    inputs = [*start, *ref]
    with adapter.running():
        if residuals:
            insides = adapter.insides(torch.tensor([source.ids]), torch.tensor([inputs]), head_mask)
            logits, maps = insides.logits, insides.attentions
        else:
            logits, maps = adapter.forward(torch.tensor([source.ids]), torch.tensor([inputs]), head_mask)
    steps = []
    offset = len(start) - 1  # the row of the first prediction
    rows, banned = [], []
    for pos in range(offset, len(inputs)):
        constrained = adapter.constrain(inputs[: pos + 1], logits[0, pos].float(), 1 << 30)
        if residuals:
            rows.append(torch.stack([r[0, pos] for r in insides.residual["decoder"]]))
            banned.append(torch.nonzero(constrained == float("-inf")).flatten())
        row = constrained.softmax(-1)
        token = int(row.argmax())
        steps.append(Step(adapter.id_to_token(token), token, float(row[token]), _top_k(row, top_k, adapter)))
    # an encoder-decoder's decoder axis starts at its last start token, as in greedy decoding; a decoder-only
    # model's at the prompt's first token
    first = 0 if adapter.family.prompt_in_decoder else offset
    maps = maps.rows_from(first, adapter.family)
    labels = [*adapter.prefix_tokens(source), *adapter.ids_to_tokens(ref)]
    trace = AttentionTrace.from_maps(source.tokens, labels[first:], maps, adapter.family,
                                     adapter.head_groups(), offset - first)
    finished = bool(steps) and steps[-1].token_id in adapter.end_ids
    text_out = adapter.detokenize([s.token_id for s in steps])
    return DecodeResult(text, tuple(steps), trace, "teacher-forced", finished, text_out, source.unknown,
                        Residuals(torch.stack(rows), tuple(banned)) if residuals else None)
