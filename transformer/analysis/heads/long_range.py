"""Detectors that need no input text: every head's pattern label (patterns.py) on synthetic inputs, and the retrieval
score of the causal self-attention's heads (Wu et al. 2024, "Retrieval Head Mechanistically Explains Long-Context
Factuality", §2).

Retrieval score: needle-in-a-haystack inputs at several depths and lengths: random tokens (the haystack) with a
needle of `NEEDLE` distinct random tokens inserted at the depth, then the needle again, teacher-forced. At each
position of the second copy after its first `CUE` tokens the model should copy the next needle token w. A copy
event of head h: the model's top prediction is w and the head's largest weight is on the needle's w. The head's
score is its copy events over the needle tokens to copy, over every input (Wu et al.: |g_h ∩ k| / |k|). Where the
model copies nothing, every score is 0 (`copy_rate` says how often it copied).

Patterns: the causal kind's on random tokens repeated twice (r r, with its induction score on the window, as
`detect_heads`); an encoder's and the cross-attention's on random tokens read as the source (the model's greedy
output as it decoded it, its own ids, never re-tokenized; `source_length` tokens).
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch
from torch import Tensor

from ...adapters import InspectableModel
from ...decode import InputError, greedy_decode, masked_decode
from ...model import Head
from ..source.causal_rows import STORE_ABOVE, causal_rows
from .detectors import _causal_setup
from .patterns import WINDOW, label_frame, pattern_frame, pattern_scores, window_induction

NEEDLE = 8  # needle tokens
CUE = 2  # needle tokens given again before the copying is scored
DEPTHS = (0.1, 0.35, 0.6, 0.85)
LENGTH = 512  # default total length (clamped to the model's)
SOURCE_LENGTH = 16  # random source tokens for the encoder's and the cross-attention's patterns


def _pool(adapter: InspectableModel) -> Tensor:
    """The ids of ordinary tokens: no specials, nothing the model cannot emit."""
    banned = set(adapter.unemittable_ids) | set(adapter.end_ids) | {adapter.pad_id, *adapter.start_ids}
    pool = torch.tensor([i for i in range(adapter.vocab_size)
                         if i not in banned and not adapter.id_to_token(i).startswith(("<", "["))])
    if pool.numel() < NEEDLE + 2:
        raise InputError(f"the model has only {pool.numel()} ordinary tokens: too few for the long-range detectors")
    return pool


def _draw(pool: Tensor, n: int, gen: torch.Generator, distinct: bool = True) -> list[int]:
    """n ids of the pool: without repeats where the pool is large enough (and `distinct`), else with."""
    if distinct and n <= pool.numel():
        return pool[torch.randperm(pool.numel(), generator=gen)[:n]].tolist()
    return pool[torch.randint(pool.numel(), (n,), generator=gen)].tolist()


def max_length(adapter: InspectableModel, length: int) -> int:
    """The causal sequence's length: `length` (at least 4 needles), at most the model's decoder positions."""
    return min(max(4 * NEEDLE, length), adapter.max_target_len)


def retrieval_scores(adapter: InspectableModel, length: int = LENGTH, depths: tuple[float, ...] = DEPTHS,
                     seed: int = 0, store_above: int = STORE_ABOVE) -> tuple[Tensor, dict]:
    """(L, H) retrieval score of each causal head over needle-in-a-haystack inputs at each depth and at lengths
    length / 2 and length; and what was measured (lengths, depths, needle, copy_rate). Only the copy region's rows
    are read: through the attention store for an input of more than `store_above` tokens (`causal_rows`)."""
    pool, gen = _pool(adapter), torch.Generator().manual_seed(seed)
    src, prefix = _causal_setup(adapter)
    total = max_length(adapter, length)
    if total < len(prefix) + 2 * NEEDLE + 2:
        raise InputError(f"the model reads at most {total} tokens: too few for the long-range detectors' needle "
                         f"inputs (at least {len(prefix) + 2 * NEEDLE + 2})")
    lengths = sorted({min(total, max(4 * NEEDLE, total // 2)), total})
    events, asked, copied = None, 0, 0
    for n in lengths:
        for depth in depths:
            needle = _draw(pool, NEEDLE, gen)
            rest = pool[~torch.isin(pool, torch.tensor(needle))]
            hay = _draw(rest if rest.numel() >= 2 else pool, n - len(prefix) - 2 * NEEDLE, gen, distinct=False)
            at = round(depth * len(hay))
            inputs = [*prefix, *hay[:at], *needle, *hay[at:], *needle]
            start, copy = len(prefix) + at, len(inputs) - NEEDLE
            rows = torch.arange(copy + CUE - 1, copy + NEEDLE - 1)  # each predicts needle[j], j = CUE..NEEDLE-1
            read = causal_rows(adapter, src, inputs, rows, store_above=store_above)
            assert read.logits is not None, "logits asked"
            want = torch.tensor(needle[CUE:])
            hit = read.logits.argmax(-1) == want  # the model copies
            peaks = torch.stack([w.argmax(-1) for w in read.layers()])  # (L, H, rows): each head's largest weight
            on_needle = peaks == (start + torch.arange(CUE, NEEDLE))
            found = (on_needle & hit).sum(-1)
            events = found if events is None else events + found
            asked += len(rows)
            copied += int(hit.sum())
    info = {"lengths": lengths, "depths": list(depths), "needle": NEEDLE, "cue": CUE, "inputs": len(lengths) *
            len(depths), "copy_rate": round(copied / asked, 4)}
    assert events is not None, "at least one length and depth"
    return events.float() / asked, info


def _causal_patterns(adapter: InspectableModel, length: int, seed: int, store_above: int = STORE_ABOVE
                     ) -> pd.DataFrame:
    """The causal kind's patterns on r r (distinct random tokens repeated twice), with the induction score on the
    window: only the window's rows are read, a layer at a time (`causal_rows`)."""
    src, prefix = _causal_setup(adapter)
    pool = _pool(adapter)
    n = min((max_length(adapter, length) - len(prefix)) // 2, pool.numel())  # no token twice in r
    r = _draw(pool, n, torch.Generator().manual_seed(seed))
    inputs = [*prefix, *r, *r]
    first = max(0, len(inputs) - WINDOW)
    read = causal_rows(adapter, src, inputs, torch.arange(first, len(inputs)), with_logits=False,
                       store_above=store_above)
    tokens = adapter.ids_to_tokens(inputs)
    per_layer = [pattern_scores(w[None], tokens, tokens, same_axis=True, first=first) | {
        "induction": window_induction(w[None], len(prefix), n, first=first)} for w in read.layers()]
    scores = {name: torch.cat([one[name] for one in per_layer]) for name in per_layer[0]}
    assert adapter.family.decoder_kind is not None, "a causal model decodes"
    return pattern_frame(adapter.family.decoder_kind, scores)


def _other_patterns(adapter: InspectableModel, source_length: int, seed: int) -> list[pd.DataFrame]:
    """The patterns of the kinds that read the source: random tokens as the source (detokenized)."""
    kinds = [k for k in adapter.family.kinds if k != adapter.family.decoder_kind]
    if not kinds:
        return []
    ids = _draw(_pool(adapter), max(2, min(source_length, adapter.max_source_len - 2)),
                torch.Generator().manual_seed(seed + 1))
    text = adapter.detokenize(ids)
    if adapter.family.decodes:
        trace = greedy_decode(adapter, text, top_k=1).trace  # its own output's ids: nothing re-tokenized
    else:
        trace = masked_decode(adapter, text, top_k=1).trace
    frames = []
    for kind in kinds:
        q_tokens, k_tokens = trace.labels(kind)
        q_axis, k_axis = adapter.family.axes[kind]
        scores = pattern_scores(trace.weights(kind), q_tokens, k_tokens, same_axis=q_axis == k_axis)
        frames.append(pattern_frame(kind, scores))
    return frames


@dataclass(frozen=True)
class LongRange:
    """Every head's pattern scores and label (`frame`: kind, layer, head, label, scores, pattern), and what the
    retrieval score was measured on (`retrieval`; None for a model without causal self-attention)."""

    frame: pd.DataFrame
    retrieval: dict | None
    length: int


def long_range_heads(adapter: InspectableModel, length: int = LENGTH, source_length: int = SOURCE_LENGTH,
                     seed: int = 0, store_above: int = STORE_ABOVE) -> LongRange:
    """The pattern label of every head of every kind, and the causal heads' retrieval scores (their `retrieval`
    column; NaN for other kinds), at `length` tokens (clamped to the model's decoder positions); inputs of more than
    `store_above` tokens are read through the attention store (the rows only)."""
    frames = _other_patterns(adapter, source_length, seed)
    info = None
    if adapter.family.decoder_kind is not None:
        causal = _causal_patterns(adapter, length, seed, store_above)
        scores, info = retrieval_scores(adapter, length, seed=seed, store_above=store_above)
        causal["retrieval"] = [float(scores[la, h]) for la, h in zip(causal["layer"], causal["head"], strict=True)]
        causal["pattern"] = label_frame(causal)
        frames.insert(0 if adapter.family.prompt_in_decoder else 1, causal)
    frame = pd.concat(frames, ignore_index=True)
    order = {k: i for i, k in enumerate(adapter.family.kinds)}
    frame = frame.sort_values(["kind", "layer", "head"], key=lambda s: s.map(order) if s.name == "kind" else s,
                              kind="stable").reset_index(drop=True)
    return LongRange(frame, info, max_length(adapter, length) if adapter.family.decodes else 0)


def long_range_dict(found: LongRange) -> dict:
    """The `retrieval` and `pattern` blocks the `heads` JSON's `detectors` object gains."""
    rows = found.frame.astype(object).where(found.frame.notna(), None).to_dict(orient="records")
    heads = [{"label": Head(r["kind"], r["layer"], r["head"]).label, "pattern": r["pattern"],
              **{k: (None if v is None else round(float(v), 4)) for k, v in r.items()
                 if k not in ("kind", "layer", "head", "label", "pattern")}} for r in rows]
    out: dict = {"pattern": {"window": WINDOW, "length": found.length, "heads": heads}}
    if found.retrieval is not None:
        causal = found.frame[found.frame["retrieval"].notna()]
        best = causal.loc[causal["retrieval"].idxmax()]
        out["retrieval"] = {**found.retrieval, "heads": [{"label": r["label"], "retrieval": r["retrieval"]}
                                                         for r in heads if r["retrieval"] is not None],
                            "best": {"label": best["label"], "score": round(float(best["retrieval"]), 4)}}
    return out
