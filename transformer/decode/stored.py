"""Greedy decoding that keeps the attention store instead of maps (long inputs to decoder-only models): the prompt
goes through the fused path once (logits at its last position only), then each chosen token one row at a time;
every step's rows are in the store and any tile is recomputed from it. The tokens are `greedy_decode`'s (the model's
generation rules, the first of equal probabilities)."""
from __future__ import annotations

from contextlib import ExitStack
from typing import Any, Sequence

import torch

from ..adapters import InspectableModel, build_store, store_chunks, store_feed
from ..model import AttentionStore
from .greedy import DecodeResult, InputError, Step, _choose, greedy_decode
from .residuals import ResidualRecorder
from .trace import AttentionTrace

STORE_ABOVE = 1024  # prompt tokens above which `decode_text` keeps the store instead of maps


def model_context(adapter: InspectableModel) -> int:
    """The longest sequence the model itself reads (its config's positions; ours: `max_len`)."""
    context = getattr(adapter, "context", None)
    native: Any = adapter  # without a context: one of our adapters, whose network's config has max_len
    return int(context) if context else int(native.model.cfg.max_len)


def stored_greedy(adapter: InspectableModel, prompt: Sequence[int], n_source: int | None = None, *, max_steps: int = 3,
                  top_k: int = 5, recorder: ResidualRecorder | None = None
                  ) -> tuple[tuple[Step, ...], AttentionStore, bool]:
    """Greedy steps after the prompt ids (a decoder-only model's whole prefix), the store of every row fed and
    whether an end token stopped it. `n_source`: how many prompt ids are source tokens (ours), default all but
    the start. `recorder` (made with `last_only=True`) keeps the residual stream at each step's position only."""
    prompt = [int(i) for i in prompt]
    if len(prompt) + max_steps > model_context(adapter):
        raise InputError(f"The input has {len(prompt):,} tokens and {max_steps} steps; this model reads at most "
                         f"{model_context(adapter):,}.")
    chunks, steps, inputs, finished = store_chunks(adapter), [], list(prompt), False
    with adapter.running(), ExitStack() as recording:
        cache = adapter.start_cache(adapter.encode(torch.tensor([prompt[: n_source or 0]])))
        if recorder is not None:
            recording.enter_context(recorder.recording(cache))
        ids = torch.tensor([prompt])
        for t in range(max_steps):
            first = (len(prompt) - 1 if n_source is None else n_source) if t == 0 else 0  # source ids: the prompt's
            logits = store_feed(adapter, ids, cache, chunks, first)
            logits = adapter.constrain(inputs, logits[0].float(), max_steps + len(prompt))
            if recorder is not None:
                recorder.note(logits)
            steps.append(_choose(adapter, logits, logits.softmax(-1), top_k, None))
            token = steps[-1].token_id
            if token in adapter.end_ids:
                finished = True
                break
            if t + 1 < max_steps:
                inputs.append(token)
                ids = torch.tensor([[token]])
    return tuple(steps), build_store(chunks), finished


def stored_decode(adapter: InspectableModel, prompt: Sequence[int], prompt_tokens: Sequence[str], *, max_steps: int = 3,
                  top_k: int = 5, n_source: int | None = None, source_tokens: Sequence[str] | None = None,
                  residuals: bool = False) -> DecodeResult:
    """`stored_greedy` as a DecodeResult whose trace holds the store (its maps are materialised only when read);
    `prompt_tokens` label the prompt's rows, `source_tokens` the trace's source (default: the prompt's);
    `residuals` records the residual stream at the steps' positions only (the logit lens at the decode steps)."""
    recorder = ResidualRecorder(adapter, last_only=True) if residuals else None
    steps, store, finished = stored_greedy(adapter, prompt, n_source, max_steps=max_steps, top_k=top_k,
                                           recorder=recorder)
    labels = [*prompt_tokens, *adapter.ids_to_tokens([s.token_id for s in steps[:-1]])]
    trace = AttentionTrace(prompt_tokens if source_tokens is None else source_tokens, labels, store=store,
                           family=adapter.family, head_groups=adapter.head_groups(),
                           step_offset=len(prompt) - 1)
    return DecodeResult("", steps, trace, "greedy", finished, adapter.detokenize([s.token_id for s in steps]),
                        residuals=None if recorder is None else recorder.result())


def decode_text(adapter: InspectableModel, text: str, *, max_steps: int = 3, top_k: int = 5,
                store_above: int = STORE_ABOVE, residuals: bool = False) -> DecodeResult:
    """Greedy decoding of `text` that keeps the attention store instead of maps when a decoder-only model's prompt
    has more than `store_above` tokens (up to the model's own context; no character cap), else `greedy_decode`.
    `residuals`: the residual stream at each step (the logit lens)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("The input is empty: type a sentence to decode.")
    source = adapter.tokenize_source(text)
    prompt = adapter.decoder_prefix(source)
    if not adapter.family.prompt_in_decoder or len(prompt) <= store_above:
        return greedy_decode(adapter, text, max_steps=max_steps, top_k=top_k, stop_at_end=True, residuals=residuals)
    result = stored_decode(adapter, prompt, adapter.prefix_tokens(source), max_steps=max_steps, top_k=top_k,
                           n_source=len(source.ids), source_tokens=source.tokens, residuals=residuals)
    return DecodeResult(text, result.steps, result.trace, result.mode, result.finished, result.output_text,
                        source.unknown, result.residuals)
