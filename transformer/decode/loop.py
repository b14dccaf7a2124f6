"""The one step loop of greedy decoding, for one decode or a padded batch of them (`greedy_decode`,
`greedy_decode_many`): each row chooses its token at each step by the same rules (the model's `constrain`, a forced
token, a seeded draw, the first of equal probabilities, the top k), and a row that has ended is fed its last token
until every row is done. What feeds the model is the feed's business: `MapsFeed` (the adapter's cached decoder
steps, every step's maps kept: one decode, a padded batch, or the beam tree's hypotheses, reordered by parent) or
the store's (`stored.StoreFeed`). `step_limit` is every decode's and search's one limit on its length."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

import torch
from torch import Tensor

from ..adapters import InspectableModel, SourceText
from ..model import AttentionMaps, EncoderOutput, HeadMask, StepOutput
from .errors import InputError
from .residuals import ResidualRecorder
from .sampling import SampledStep, Sampler
from .trace import AttentionTrace


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


def step_limit(adapter: InspectableModel, n_source: int, n_start: int, max_steps: int | None,
               most: int | None = None) -> int:
    """How many tokens a decode of `n_source` source ids, its decoder prefix `n_start` ids, may produce: `max_steps`,
    else the model's own default (at most `most`), never more than its decoder reads (`max_target_len`)."""
    own = adapter.default_max_steps(n_source)
    wanted = max_steps if max_steps is not None else own if most is None else min(own, most)
    return min(adapter.max_target_len - n_start + 1, wanted)


class MapsFeed:
    """Feeds the adapter's cached decoder, keeping every step's output (its maps): the prefix once, then one token a
    row; `rows` > 1: a padded batch whose start ids are stepped for every row. `reorder` keeps the rows the next step
    continues (their encoder output and cache, as `generate` reorders its cache by beam index)."""

    def __init__(self, adapter: InspectableModel, encoded: EncoderOutput, cache: object, start: Sequence[int],
                 head_mask: HeadMask | None = None, rows: int = 1) -> None:
        self.adapter, self.encoded, self.cache, self.head_mask = adapter, encoded, cache, head_mask
        self.start, self.rows, self.outputs = list(start), rows, list[StepOutput]()

    def prefill(self) -> Tensor:
        if self.rows > 1:
            for token in self.start[:-1]:
                self.adapter.step(torch.full((self.rows, 1), token), self.encoded, self.cache, self.head_mask)
            return self.step([self.start[-1]] * self.rows)
        self.outputs.append(self.adapter.prefill(self.start, self.encoded, self.cache, self.head_mask))
        return self.outputs[-1].logits

    def step(self, tokens: Sequence[int]) -> Tensor:
        """One token a row; the logits (rows, V)."""
        self.outputs.append(self.adapter.step(torch.tensor(list(tokens))[:, None], self.encoded, self.cache,
                                              self.head_mask))
        return self.outputs[-1].logits

    def reorder(self, rows: Sequence[int]) -> None:
        """Row b of the next step continues row `rows[b]` (repeats allowed)."""
        self.encoded, self.cache = self.adapter.select_rows(self.encoded, self.cache, torch.tensor(list(rows)))

    def trace(self, source_tokens: Sequence[str], labels: Sequence[str], step_offset: int) -> AttentionTrace:
        return maps_trace(self.adapter, self.encoded.encoder_self, self.outputs, source_tokens, labels, step_offset)


def maps_trace(adapter: InspectableModel, encoder_self: Sequence[Tensor], outputs: Sequence[StepOutput],
               source_tokens: Sequence[str], labels: Sequence[str], step_offset: int) -> AttentionTrace:
    """The trace of a decode's step outputs (`labels`: every decoder input; `step_offset`: the row of the first
    prediction); an encoder-decoder's first rows (start ids before the last) have no maps and are left out."""
    first = step_offset + 1 - outputs[0].decoder_self[0].shape[2]  # decoder inputs before the first row
    maps = AttentionMaps.from_steps(encoder_self, outputs, adapter.family)
    return AttentionTrace.from_maps(source_tokens, labels[first:], maps, adapter.family, adapter.head_groups(),
                                    step_offset - first)


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
