"""Masked-token tasks for our encoder-only model: a task's pairs read as one input `A </s> B </s>` (a source and its
translation, reversal or sorting; Lample & Conneau 2019's translation language modelling), a share of one
sentence's tokens masked, the model scored on the masked tokens.

The rules, training and evaluation alike:
- each pair masks `MASK_SHARE` (15 %, at least one) of the tokens of ONE of its two sentences, the sentence drawn
  at random: the other sentence always holds what was masked (its translation, its mirror, its letters), so the
  task can be learnt exactly and the model has to read across the pair;
- training replaces BERT's way (Devlin et al. 2019): of the chosen tokens 80 % become <mask>, 10 % a random token,
  10 % stay; evaluation (and the probe) replaces every chosen token by <mask>, as a user does on the Decode page;
- the mask is the start token <s> (id 1), which an encoder-only model never reads otherwise; the adapter shows it
  as "<mask>". Separators (</s>) and padding are never masked;
- the draws are per example, from (seed, pass over the data, example index), so a rank of a distributed run masks
  its share of a global batch exactly as one process would.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from ..model import ConfigError
from .batching import END_ID, PAD_ID, START_ID, Batch, PackedIds, pad
from .tasks import Task
from .tokenizers import Tokenizer, build_word_tokenizer

MASK_ID = START_ID  # <s>: free in an encoder-only model's input
MASK_TOKEN = "<mask>"
MASK_SHARE = 0.15
FIRST_WORD_ID = 4  # ids below are specials (pad, <s>/<mask>, </s>, <unk>): never drawn as a random replacement
EVAL_SEED = 1234  # evaluation masks the same tokens at every evaluation


def pair_ids(first: Sequence[int], second: Sequence[int]) -> list[int]:
    """One input of a pair: A </s> B </s> (B empty: A </s>)."""
    return [*first, END_ID, *second, END_ID] if second else [*first, END_ID]


@dataclass(frozen=True)
class MaskedExample:
    """One input with masks: what the model reads, and the original id at each masked position (0 elsewhere)."""

    ids: list[int]
    labels: list[int]


def mask_pair(ids: Sequence[int], rng: np.random.Generator, vocab_size: int, *, bert: bool) -> MaskedExample:
    """Mask `MASK_SHARE` of one sentence's tokens (the sentence drawn by `rng`); `bert`: 80/10/10 replacement,
    else every chosen token becomes <mask>."""
    ids = list(ids)
    seps = [i for i, t in enumerate(ids) if t == END_ID]
    starts = [0] + [s + 1 for s in seps[:-1]]
    spans = [(a, b) for a, b in zip(starts, seps, strict=False) if b > a]
    labels = [PAD_ID] * len(ids)
    if not spans:
        return MaskedExample(ids, labels)
    a, b = spans[int(rng.integers(len(spans)))]
    n = max(1, int(round(MASK_SHARE * (b - a))))
    for pos in sorted(rng.choice(np.arange(a, b), size=min(n, b - a), replace=False).tolist()):
        labels[pos] = ids[pos]
        roll = rng.random() if bert else 0.0
        if roll < 0.8:
            ids[pos] = MASK_ID
        elif roll < 0.9 and vocab_size > FIRST_WORD_ID:
            ids[pos] = int(rng.integers(FIRST_WORD_ID, vocab_size))
    return MaskedExample(ids, labels)


def masked_batch(examples: Sequence[MaskedExample]) -> Batch:
    """A batch the trainer reads: src the masked ids (B, S), tgt_out the labels (B, S) (0: not scored); tgt_in is
    src (an encoder-only model reads no decoder inputs)."""
    src = pad([e.ids for e in examples])
    return Batch(src, src, pad([e.labels for e in examples], src.size(1)))


def example_rng(seed: int, draw: int, index: int) -> np.random.Generator:
    """The generator of one example's masks in one pass over the data."""
    return np.random.default_rng([seed & 0xFFFFFFFF, draw, index])


class MaskedBatches:
    """Endless masked batches over a sampler's batches of example indices (`BucketSampler` or one rank's
    `ShardedBucketSampler`): each example masked afresh in every pass (RoBERTa's dynamic masking)."""

    def __init__(self, sampler: Any, pairs: Sequence[Sequence[int]], vocab_size: int, seed: int) -> None:
        self.sampler, self.pairs, self.vocab_size, self.seed = sampler, pairs, vocab_size, seed

    def __iter__(self) -> Iterator[Batch]:
        draw = 0
        while True:
            for idx in self.sampler.epoch():
                if not idx:  # a rank without a share of a tiny global batch: one separator, nothing scored
                    yield masked_batch([MaskedExample([END_ID], [PAD_ID])])
                    continue
                yield masked_batch([mask_pair(self.pairs[i], example_rng(self.seed, draw, i), self.vocab_size,
                                              bert=True) for i in idx])
            draw += 1


def encode_pairs(task: Task, limit: int) -> PackedIds:
    """The task's training pairs as `A </s> B` ids (the batch adds nothing), each side cut so the pair fits."""
    tok = task.src_tokenizer
    side = max((limit - 2) // 2, 1)
    texts = ((e.source, e.target) for e in task.train)

    def encode_many(batch: list[tuple[str, str]]) -> list[list[int]]:
        firsts = tok.encode_many([a for a, _ in batch])
        seconds = tok.encode_many([b for _, b in batch])
        return [pair_ids(a[:side], b[:side]) for a, b in zip(firsts, seconds, strict=True)]

    return PackedIds.encode(encode_many, texts, limit)  # type: ignore[arg-type]


def evaluation_examples(task: Task, n: int, limit: int) -> list[MaskedExample]:
    """The first `n` validation pairs, masked the same way at every evaluation (every chosen token <mask>)."""
    tok = task.src_tokenizer
    side = max((limit - 2) // 2, 1)
    out = []
    for i, e in enumerate(task.valid[:n]):
        ids = pair_ids(tok.encode(e.source)[:side], tok.encode(e.target)[:side])
        out.append(mask_pair(ids, example_rng(EVAL_SEED, 0, i), tok.vocab_size, bert=False))
    return out


def masked_accuracy(model: torch.nn.Module, examples: Sequence[MaskedExample], batch_size: int = 256
                    ) -> tuple[float, float, float, list[list[int]]]:
    """Loss, masked-token accuracy and whole-example accuracy (every mask right) of `model` (in eval mode) on
    masked examples, and each example's predicted ids at its masks."""
    device = next(model.parameters()).device
    loss, tokens, correct, whole, predicted = 0.0, 0, 0, 0, []
    with torch.no_grad():
        for i in range(0, len(examples), batch_size):
            batch = masked_batch(examples[i: i + batch_size]).to(device)
            logits = model(batch.src)  # (B, S, V)
            keep = batch.tgt_out != PAD_ID
            guess = logits.argmax(-1)
            loss += torch.nn.functional.cross_entropy(logits[keep].float(), batch.tgt_out[keep], reduction="sum").item()
            right = (guess == batch.tgt_out) | ~keep
            tokens += int(keep.sum())
            correct += int((right & keep).sum())
            whole += int(right.all(-1).sum())
            predicted += [row[k].tolist() for row, k in zip(guess, keep, strict=True)]
    return loss / max(tokens, 1), correct / max(tokens, 1), whole / max(len(examples), 1), predicted


def joint_tokenizer(task: Task) -> Tokenizer:
    """One vocabulary for both sides of the task's pairs: the task's own when its sides share one (char tasks, a
    joint subword vocabulary), else whole words of both sides' training sentences."""
    if task.src_tokenizer is task.tgt_tokenizer or task.src_tokenizer.to_json() == task.tgt_tokenizer.to_json():
        return task.src_tokenizer
    if task.src_tokenizer.kind != "word" or task.tgt_tokenizer.kind != "word":
        raise ConfigError("an encoder-only model needs one vocabulary for both sentences: choose a joint "
                         "subword vocabulary or whole words")
    texts = (t for e in task.train for t in (e.source, e.target))
    return build_word_tokenizer(texts, min_freq=int(task.spec.get("min_freq", 1)))


def masked_lm_task(task: Task) -> Task:
    """The task as an encoder-only model trains on it: both sides read with one joint vocabulary (a no-op for a
    task that has one)."""
    tok = joint_tokenizer(task)
    if tok is task.src_tokenizer and tok is task.tgt_tokenizer:
        return task
    return replace(task, src_tokenizer=tok, tgt_tokenizer=tok)


def probe_positions(ids: Sequence[int]) -> tuple[int, ...]:
    """Where the probe is masked: every third token of sentence B from its first (of A when there is no B), so the
    live picture shows each masked token reading its counterpart across the pair."""
    seps = [i for i, t in enumerate(ids) if t == END_ID]
    if len(seps) >= 2 and seps[1] > seps[0] + 1:
        a, b = seps[0] + 1, seps[1]
    else:
        a, b = 0, seps[0] if seps else len(ids)
    return tuple(range(a, b, 3))
