"""Source or prefix: at each decode step of an encoder-decoder, how much of the update came through cross-attention
(the source) and how much through decoder self-attention (the prefix), and the flags a translator acts on.

- **Shares** (norm-based, as Kobayashi et al. 2020 measure a head's effect by the norm of what it writes): at step s
  and decoder layer l, `c_l = ||sum_h W_O^h z_h||` of the cross-attention sublayer and `p_l` the same of the
  self-attention sublayer, each the sum of the heads' outputs written into the residual stream at the step's query
  position (the output projection's bias left out: it comes from neither). The step's source share is
  `sum_l c_l / sum_l (c_l + p_l)`, the prefix share the rest. This is the split Voita et al. (2021, "Analyzing the
  source and target contributions to predictions in NMT") and Ferrando et al. (2022, ALTI+) report; they propagate it
  through the layers (LRP, ALTI), this reads each layer's writes as they are.
- **Detached steps** (Guerreiro et al. 2023, "Looking for a needle in a haystack", adapted per step): the step's
  cross-attention, the mean of the last decoder layer's heads, compared with the uniform distribution over the source
  by the Wasserstein-1 distance with source positions scaled to [0, 1] as ground distance (all mass on the last or
  first token: 0.5; uniform: 0). The paper scores a whole sentence; a step is flagged *detached* when its distance is
  at least `DETACHED_DISTANCE` and at least `DETACHED_MASS` of it sits on the source's special tokens (</s>, a
  language tag): collapsed there, not aligned to a word at the sentence's edge. The step that emits </s> is never
  flagged (it reads the source's </s> by design).
- **Omitted source tokens**: a word piece (not a special) that no step which is not detached attends to most
  (its argmax over the source's words): never attended after alignment.
- **Per sentence** (the paper's form): `wass_to_unif`, the distance of the steps' mean cross-attention to uniform;
  `rank_corpus` sorts a corpus by it, highest (most likely detached) first.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch import Tensor

from ...adapters import InspectableModel
from ...decode import DecodeResult, InputError, greedy_decode, sink_positions
from ..heads.head_capture import CapturedDecode, capture_decode

DETACHED_DISTANCE = 0.3  # Wasserstein-1 to uniform, positions in [0, 1]
DETACHED_MASS = 0.5  # share of the step's cross-attention on the source's special tokens


def wasserstein_to_uniform(weights: Tensor) -> Tensor:
    """W1 of each row (..., S) (summing to 1) to the uniform distribution over S positions at 0, 1/(S-1), ..., 1."""
    n = weights.shape[-1]
    if n < 2:
        return weights.new_zeros(weights.shape[:-1])
    gap = weights.cumsum(-1) - torch.arange(1, n + 1, dtype=weights.dtype) / n
    return gap[..., :-1].abs().sum(-1) / (n - 1)


def detached_steps(weights: Tensor, specials: Sequence[int]) -> tuple[Tensor, Tensor, Tensor]:
    """(distance to uniform, mass on `specials`, detached) per row of `weights` (steps, S)."""
    distance = wasserstein_to_uniform(weights)
    mass = weights[:, list(specials)].sum(-1) if specials else weights.new_zeros(weights.shape[0])
    return distance, mass, (distance >= DETACHED_DISTANCE) & (mass >= DETACHED_MASS)


def omitted_tokens(weights: Tensor, specials: Sequence[int], keep: Tensor) -> list[int]:
    """0-based source positions (not specials) that no kept row of `weights` (steps, S) attends to most."""
    words = [j for j in range(weights.shape[1]) if j not in set(specials)]
    rows = weights[keep]
    if not words or rows.numel() == 0:
        return []
    aligned = {words[int(i)] for i in rows[:, words].argmax(-1)}
    return [j for j in words if j not in aligned]


@dataclass(frozen=True)
class StepReliance:
    """One decode step (1-based): its token, source and prefix shares, distance to uniform, mass on specials."""

    step: int
    token: str
    source: float
    prefix: float
    layers: tuple[float, ...]  # the source share of each decoder layer
    to_uniform: float
    special_mass: float
    detached: bool


@dataclass(frozen=True)
class Reliance:
    """Per step and per sentence: how much came from the source, detached steps, omitted source tokens."""

    model: str
    source_tokens: tuple[str, ...]
    output: str
    steps: tuple[StepReliance, ...]
    omitted: tuple[int, ...]  # 1-based source positions
    wass_to_unif: float  # the steps' mean cross-attention against uniform (the paper's sentence score)

    @property
    def source_share(self) -> float:
        """The mean source share over the steps."""
        return sum(s.source for s in self.steps) / max(len(self.steps), 1)

    def to_dict(self) -> dict[str, Any]:
        """The JSON `reliance` prints."""
        return {"model": self.model, "source_tokens": list(self.source_tokens), "output": self.output,
                "source_share": round(self.source_share, 4), "wass_to_unif": round(self.wass_to_unif, 4),
                "detached_steps": [s.step for s in self.steps if s.detached],
                "omitted": [{"position": p, "token": self.source_tokens[p - 1]} for p in self.omitted],
                "steps": [{"step": s.step, "token": s.token, "source": round(s.source, 4), "prefix": round(s.prefix, 4),
                           "layers": [round(x, 4) for x in s.layers], "to_uniform": round(s.to_uniform, 4),
                           "special_mass": round(s.special_mass, 4), "detached": s.detached} for s in self.steps]}


def sublayer_writes(adapter: InspectableModel, captured: CapturedDecode, kind: str) -> Tensor:
    """||sum_h W_O^h z_h|| per decoder layer and decoder row of `kind`'s sublayer, (L, T): what it wrote into the
    residual stream, the output projection's bias left out."""
    norms = []
    for layer, inputs in enumerate(captured.insides.inputs[kind]):
        if inputs.output is None:
            raise InputError(f"{adapter.name}: the {kind} output projection was not captured")
        _, bias = adapter.output_projection(kind, layer)
        written = inputs.output[0].float() - (0 if bias is None else bias.detach().float())
        norms.append(written.norm(dim=-1))
    return torch.stack(norms)


def reliance(adapter: InspectableModel, result: DecodeResult, captured: CapturedDecode | None = None) -> Reliance:
    """Source and prefix shares per step of `result` (a decode of `adapter`), detached steps, omitted source tokens."""
    family = adapter.family
    if family.cross_kind is None:
        raise InputError(f"{adapter.name} has no cross-attention: source or prefix is for encoder-decoder models")
    if not result.steps:
        raise InputError("the decode has no steps")
    captured = captured or capture_decode(adapter, result)
    cross, self_kind = family.cross_kind, family.decoder_kind
    assert self_kind is not None  # a family with cross-attention decodes
    rows = torch.arange(len(result.steps)) + captured.first
    c = sublayer_writes(adapter, captured, cross)[:, rows]  # (L, steps)
    p = sublayer_writes(adapter, captured, self_kind)[:, rows]
    source = c.sum(0) / (c + p).sum(0).clamp_min(1e-12)
    per_layer = c / (c + p).clamp_min(1e-12)
    attention = captured.insides.attentions.by_kind[cross][-1][0].float().mean(0)[rows]  # (steps, S)
    specials = sink_positions(captured.source_tokens, first=False, specials=True)
    distance, mass, detached = detached_steps(attention, specials)
    ends = torch.tensor([s.token_id in set(adapter.end_ids) for s in result.steps])
    detached &= ~ends  # the step that emits </s> reads the source's </s> by design
    omitted = omitted_tokens(attention, specials, ~detached)
    steps = tuple(StepReliance(i + 1, s.token, float(source[i]), 1.0 - float(source[i]),
                               tuple(float(x) for x in per_layer[:, i]), float(distance[i]), float(mass[i]),
                               bool(detached[i])) for i, s in enumerate(result.steps))
    mean = attention.mean(0, keepdim=True)
    return Reliance(adapter.name, captured.source_tokens, result.output_text, steps, tuple(j + 1 for j in omitted),
                    float(wasserstein_to_uniform(mean)[0]))


def text_reliance(adapter: InspectableModel, text: str, max_steps: int | None = None) -> Reliance:
    """`reliance` of `text`'s greedy decode."""
    return reliance(adapter, greedy_decode(adapter, text, top_k=1, max_steps=max_steps))


def rank_corpus(adapter: InspectableModel, sources: Sequence[str],
                max_steps: int | None = None) -> list[dict[str, Any]]:
    """One row per sentence (line, source, output, wass_to_unif, source_share, detached, omitted), most detached
    first; a sentence the model cannot read gets its error instead."""
    rows = []
    for line, text in enumerate(sources, 1):
        try:
            r = text_reliance(adapter, text, max_steps)
        except InputError as exc:
            rows.append({"line": line, "source": text, "error": str(exc)})
            continue
        rows.append({"line": line, "source": text, "output": r.output, "wass_to_unif": round(r.wass_to_unif, 4),
                     "source_share": round(r.source_share, 4), "detached": sum(s.detached for s in r.steps),
                     "omitted": [r.source_tokens[p - 1] for p in r.omitted]})
    return sorted(rows, key=lambda r: (-r.get("wass_to_unif", -1.0), r["line"]))
