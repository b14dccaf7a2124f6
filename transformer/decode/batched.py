"""Several greedy decodes on one model as one padded batch: each result is what `greedy_decode` gives alone.

A decoder step of a large model on a CPU is bound by reading its weights (bart-large: ~0.9 GB a step for one
token), so eight sequences stepped together cost little more than one. The sources are encoded as one batch padded
to the longest (`InspectableModel.encode_many`: the padding is masked in the encoder and in every step's
cross-attention, so a row's weights are its own, up to float rounding; one encoder pass reads the weights once
instead of eight times: 2.9 s instead of 5.4 s for eight 22-token sources at bart-large's shape on one busy core),
and each row chooses its tokens by the same rules as `greedy_decode` (`constrain`, ties, top-k). A row that has ended
is fed its end token until the longest is done, and its later outputs are dropped. Only plain greedy decodes are
batched: forced tokens, head masks, residuals and the DecoderLens go through `greedy_decode` one at a time. The
step loop is greedy's own (`loop.run_rows`), over the batch's rows.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..adapters import InspectableModel
from ..model import StepOutput
from .greedy import DecodeResult, InputError, greedy_decode, read_source
from .loop import DecodeRow, MapsFeed, maps_trace, run_rows, step_limit


def can_batch(adapter: InspectableModel) -> bool:
    """Whether `adapter`'s decodes can share a batch: an encoder-decoder whose adapter pads encoder outputs."""
    family = adapter.family
    return (family.decodes and family.cross_kind is not None and not family.prompt_in_decoder
            and type(adapter).encode_many is not InspectableModel.encode_many)


def _row_output(out: StepOutput, b: int, n_source: int) -> StepOutput:
    """Row `b` of a batched step, its cross-attention cut to its own source's keys."""
    return StepOutput(out.logits[b: b + 1], tuple(w[b: b + 1] for w in out.decoder_self),
                      tuple(w[b: b + 1, ..., :n_source] for w in out.cross))


def greedy_decode_many(adapter: InspectableModel, texts: Sequence[str], *, top_k: int | Sequence[int] = 5,
                       max_steps: int | None = None, readers: Sequence[InspectableModel] | None = None
                       ) -> list[DecodeResult | InputError]:
    """`greedy_decode(adapter, text, top_k=k)` for each text, stepped as one batch where `adapter` can (`can_batch`);
    a text the model cannot read gives its InputError in its place instead of a result. `readers`: each text's own
    adapter of `adapter`'s network (sessions build their own; its tokenizer, prefix and generation rules read and
    choose that text's tokens), `adapter` for all by default."""
    ks = [int(top_k)] * len(texts) if isinstance(top_k, int) else [int(k) for k in top_k]
    readers = list(readers) if readers is not None else [adapter] * len(texts)
    if any(r.network is not adapter.network or r.start_ids != adapter.start_ids for r in readers):
        raise ValueError("greedy_decode_many: every reader must be an adapter of the same network")
    if not can_batch(adapter) or len(texts) < 2:
        return [_alone(r, text, k, max_steps) for r, text, k in zip(readers, texts, ks, strict=True)]
    results: list[DecodeResult | InputError | None] = [None] * len(texts)
    rows: dict[int, DecodeRow] = {}
    for i, (reader, text, k) in enumerate(zip(readers, texts, ks, strict=True)):
        try:
            source = read_source(reader, text)
        except InputError as exc:
            results[i] = exc
            continue
        start = reader.decoder_prefix(source)
        n_max = max(step_limit(reader, len(source.ids), len(start), max_steps),
                    step_limit(reader, len(source.ids), len(start), 1))
        rows[i] = DecodeRow(reader, source, list(start), n_max, k)
    if rows:
        for i, result in _decode_rows(adapter, rows, texts).items():
            results[i] = result
    return results  # type: ignore[return-value]


def _alone(adapter: InspectableModel, text: str, top_k: int, max_steps: int | None) -> DecodeResult | InputError:
    try:
        return greedy_decode(adapter, text, top_k=top_k, max_steps=max_steps)
    except InputError as exc:
        return exc


def _decode_rows(adapter: InspectableModel, rows: dict[int, DecodeRow], texts: Sequence[str]
                 ) -> dict[int, DecodeResult]:
    order = list(rows)
    batch = [rows[i] for i in order]
    with adapter.running():
        merged = adapter.encode_many([row.source.ids for row in batch])
        assert merged is not None, "can_batch: this adapter encodes many sources at once"
        feed = MapsFeed(adapter, merged, adapter.start_cache(merged), adapter.start_ids, rows=len(batch))
        run_rows(batch, feed)
    n_start = len(adapter.start_ids)
    return {i: _result(row, texts[i], _own_rows(merged.encoder_self, b, len(row.source.ids)),
                       [_row_output(out, b, len(row.source.ids)) for out in feed.outputs[:len(row.steps)]], n_start)
            for b, (i, row) in enumerate(zip(order, batch, strict=True))}


def _own_rows(encoder_self: tuple[torch.Tensor, ...], b: int, n_source: int) -> tuple[torch.Tensor, ...]:
    """Row `b`'s encoder self-attention, its own queries and keys only: (1, H, n, n) per layer."""
    return tuple(w[b: b + 1, :, :n_source, :n_source] for w in encoder_self)


def _result(row: DecodeRow, text: str, encoder_self: tuple[torch.Tensor, ...], outputs: list[StepOutput],
            n_start: int) -> DecodeResult:
    """The row's DecodeResult, built as `greedy_decode` builds it."""
    adapter = row.adapter
    source, steps = row.source, row.steps
    labels = [*adapter.prefix_tokens(source), *adapter.ids_to_tokens(row.inputs[n_start:])]
    trace = maps_trace(adapter, encoder_self, outputs, source.tokens, labels, n_start - 1)
    text_out = adapter.detokenize([s.token_id for s in steps])
    return DecodeResult(text, tuple(steps), trace, "greedy", row.finished, text_out, source.unknown)
