"""The one step loop of greedy decoding, for one decode or a padded batch of them (`greedy_decode`,
`greedy_decode_many`): each row chooses its token at each step by the same rules (the model's `constrain`, a forced
token, a seeded draw, the first of equal probabilities, the top k), and a row that has ended is fed its last token
until every row is done. What feeds the model (the maps, the attention store, a batch) is the feed's business."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

import torch
from torch import Tensor

from ..adapters import InspectableModel, SourceText
from .errors import InputError
from .residuals import ResidualRecorder
from .sampling import SampledStep, Sampler


@dataclass(frozen=True)
class Step:
    """One decoder position: the token chosen there, its probability and the top-k candidates."""

    token: str
    token_id: int
    prob: float
    top_k: tuple[tuple[str, float], ...]
    forced: bool = False


class Feed(Protocol):
    """What the loop feeds: the rows' prefixes first, then one token a row; the logits after each, (rows, V)."""

    def prefill(self) -> Tensor: ...

    def step(self, tokens: Sequence[int]) -> Tensor: ...


@dataclass
class DecodeRow:
    """One decode the loop steps: its model, source and prefix, its limits and rules, and what it has chosen."""

    adapter: InspectableModel  # the row's own adapter: its tokenizer, prefix and generation rules
    source: SourceText
    start: list[int]  # the decoder's prefix
    n_max: int
    top_k: int
    forced: Sequence[int] = ()
    stop_at_end: bool = True
    sampler: Sampler | None = None
    recorder: ResidualRecorder | None = None
    inputs: list[int] = field(default_factory=list)  # every decoder input so far (the prefix first)
    steps: list[Step] = field(default_factory=list)
    samples: list[SampledStep | None] = field(default_factory=list)
    finished: bool = False  # ended with an end token
    done: bool = False

    def __post_init__(self) -> None:
        self.inputs = self.inputs or list(self.start)
        self.done = self.done or self.n_max <= 0


def run_rows(rows: Sequence[DecodeRow], feed: Feed) -> None:
    """Step every row until each has ended or reached its limit: the one greedy loop."""
    if all(row.done for row in rows):
        return
    logits, t = feed.prefill(), 0
    while True:
        for b, row in enumerate(rows):
            if not row.done:
                advance(row, logits[b], t)
        if all(row.done for row in rows):
            return
        t += 1
        logits = feed.step([row.steps[-1].token_id for row in rows])


def advance(row: DecodeRow, raw: Tensor, t: int) -> None:
    """Row `row` chooses its token at step `t` from the logits `raw` (V,) after its inputs."""
    adapter = row.adapter
    logits = adapter.constrain(row.inputs, raw.float(), row.n_max + len(row.start))
    probs = logits.softmax(-1)
    if row.recorder is not None:
        row.recorder.note(logits)
    forced_id = row.forced[t] if t < len(row.forced) else None
    if forced_id is not None and forced_id in adapter.banned_after(row.inputs):
        raise InputError(f"{adapter.id_to_token(forced_id)!r} cannot be forced after "
                         f"{' '.join(adapter.ids_to_tokens(row.inputs[len(row.start):]))!r}: this model's generation "
                         "config bans that sequence (bad_words_ids), so it never outputs it.")
    if row.sampler is not None and forced_id is None:
        token, sample = row.sampler.draw(logits, adapter.id_to_token)
        row.samples.append(sample)
        row.steps.append(drawn(adapter, probs, row.top_k, token))
    else:
        row.samples.append(None)
        row.steps.append(choose(adapter, logits, probs, row.top_k, forced_id))
    token = row.steps[-1].token_id
    if token in adapter.end_ids and row.stop_at_end:
        row.finished = row.done = True
    elif t + 1 >= row.n_max:
        row.done = True
    else:
        row.inputs.append(token)


def candidates(probs: Tensor, k: int) -> list[tuple[int, float]]:
    """The k most probable (id, probability), best first; only what can be emitted (probability > 0)."""
    p, i = probs.topk(min(k, probs.numel()))
    return [(t, v) for t, v in zip(i.tolist(), p.tolist(), strict=True) if v > 0]


def choose(adapter: InspectableModel, logits: Tensor, probs: Tensor, k: int, forced: int | None) -> Step:
    """The Step for the forced token or the most probable one (the first of equals, as argmax), with the top k;
    read off one top-k, so a decoder step costs few tensor ops."""
    top = candidates(probs, max(k, 2))
    if forced is not None:
        token = forced
    elif len(top) > 1 and top[0][1] == top[1][1]:
        token = int(probs.argmax())  # a tie: topk's order among equals is unspecified
    else:
        token = top[0][0] if top else int(probs.argmax())
    prob = top[0][1] if top and top[0][0] == token else float(probs[token])
    # one choice left by the model's rules: exactly one finite logit (its probability is then exactly 1)
    only_choice = bool(top) and top[0][1] == 1.0 and int(torch.isfinite(logits).sum()) == 1
    return Step(adapter.id_to_token(token), token, prob, tuple((adapter.id_to_token(t), v) for t, v in top[:k]),
                forced is not None or only_choice)


def drawn(adapter: InspectableModel, probs: Tensor, k: int, token: int) -> Step:
    """The Step of a drawn token: its probability and the top k in the model's own (constrained) distribution."""
    top = candidates(probs, k)
    return Step(adapter.id_to_token(token), token, float(probs[token]),
                tuple((adapter.id_to_token(t), v) for t, v in top))
