"""Trainer with a step-level API and callbacks; schedule, clipping, budgets, evaluation, non-finite guard."""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Protocol, Sequence

import torch
import torch.nn.functional as F

from ..data import Batch, BucketSampler, MaskedBatches, PackedIds, Task, make_batch
from ..data.masking import encode_pairs, evaluation_examples, masked_accuracy
from ..model import (
    DecoderOnlyTransformer,
    EncoderOnlyTransformer,
    ModelConfig,
    Network,
    TrainConfig,
    build_model,
    make_optimizer,
)
from .device import cpu_copy
from .precision import autocast, resolve_precision


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; the weights were rolled back to the last finite step."""


@dataclass(frozen=True)
class StepStats:
    """What one optimisation step did."""

    step: int
    loss: float
    accuracy: float
    lr: float
    tokens: int
    elapsed: float  # training seconds so far, this run and earlier ones


class Callback(Protocol):
    def on_step_end(self, trainer: "Trainer", stats: StepStats) -> None: ...
    def on_eval(self, trainer: "Trainer", metrics: dict[str, Any]) -> None: ...


def lr_at(cfg: TrainConfig, step: int, elapsed: float | None = None) -> float:
    """Learning rate for optimiser step `step` (0-based): linear warmup, then the chosen decay.

    With a time budget (cfg.max_seconds) and the training seconds so far, the cosine decay follows whichever
    of steps or time runs out first, so a run cut by its budget still ends annealed; with cfg.decay_steps it
    follows that many steps alone, then stays at the final rate (the stage demo trains on until its picture is
    clean, the same on a slow machine as on a fast one).
    """
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return cfg.lr
    if cfg.schedule == "inverse_sqrt":
        return cfg.lr * math.sqrt(max(cfg.warmup_steps, 1) / (step + 1))
    span = max((cfg.decay_steps or cfg.max_steps) - cfg.warmup_steps, 1)
    progress = min((step - cfg.warmup_steps) / span, 1.0)
    if cfg.max_seconds is not None and elapsed is not None and not cfg.decay_steps:
        progress = max(progress, min(elapsed / cfg.max_seconds, 1.0))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


class Trainer:
    """Owns a model, its optimiser and data; `train_step` does one step, `run` loops within budgets.

    The model trains on `device` (the CPU by default); `state()` and checkpoints are CPU copies whatever it is.
    """

    def __init__(self, task: Task, model_cfg: ModelConfig, train_cfg: TrainConfig, *,
                 model: Network | None = None, step: int = 0, elapsed: float = 0.0,
                 optimizer_state: dict | None = None, history: Sequence[dict] = (), evals: Sequence[dict] = (),
                 callbacks: Sequence[Callback] = (), device: torch.device | str = "cpu") -> None:
        torch.manual_seed(train_cfg.seed)
        self.task, self.model_cfg, self.cfg = task, model_cfg, train_cfg
        self.device = torch.device(device)
        self.model = (model if model is not None else build_model(model_cfg)).to(self.device)
        self.model.train()
        self.optimizer = make_optimizer(self.model, train_cfg)
        if optimizer_state is not None:
            self.optimizer.load_state_dict(optimizer_state)
        self.step, self.elapsed = step, elapsed
        self.history: list[dict] = list(history)
        self.evals: list[dict] = list(evals)
        self.callbacks = list(callbacks)
        self._batches: Iterator[Batch] | None = None  # built at the first step (encoding the data takes a while)
        self._last_good = [p.detach().clone() for p in self.model.parameters()]
        self.precision, self.precision_note = resolve_precision(train_cfg.precision, self.device.type)
        self.done: str | None = None  # a callback's reason to end `run` early (the stage demo's "picture clean")

    def _next_batch(self) -> Batch:
        if self._batches is None and self.model_cfg.architecture == "encoder-only":  # masked tokens of each pair
            pairs = encode_pairs(self.task, self.model_cfg.max_len)
            sampler = self._sampler(pairs, [[]] * len(pairs))  # bucketed by the pair's length alone
            self._batches = iter(MaskedBatches(sampler, pairs, self.model_cfg.src_vocab_size,
                                               self.cfg.seed + self.step))
        if self._batches is None:
            limit = self.model_cfg.max_len - 1
            train = self.task.train
            src = PackedIds.encode(self.task.src_tokenizer.encode_many, (e.source for e in train), limit)
            tgt = PackedIds.encode(self.task.tgt_tokenizer.encode_many, (e.target for e in train), limit)
            self._batches = iter(self._sampler(src, tgt))
        return next(self._batches)

    def _sampler(self, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> Iterable[Batch]:
        """The batches of the encoded training pairs, from seed + step (so a resumed run draws new ones)."""
        return BucketSampler(src, tgt, self.cfg.batch_size, seed=self.cfg.seed + self.step)

    def state(self) -> dict[str, Any]:
        """What training resumes from: weights, optimizer state, step and training seconds (CPU copies)."""
        return {"model": cpu_copy(self.model.state_dict()), "optimizer": cpu_copy(self.optimizer.state_dict()),
                "step": self.step, "elapsed": self.elapsed}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from `state()` of a trainer with the same configs; batches restart from seed + step."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step, self.elapsed = int(state["step"]), float(state["elapsed"])
        self._batches = None
        torch._foreach_copy_(self._last_good, [p.detach() for p in self.model.parameters()])

    def loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean cross-entropy over target tokens (padding ignored) and the per-token correctness."""
        with autocast(self.precision, self.device.type):
            logits = self.model(batch.src, batch.tgt_in)  # (B, T, V)
        loss = F.cross_entropy(logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0,
                               label_smoothing=self.cfg.label_smoothing)
        keep = batch.tgt_out != 0
        correct = (logits.argmax(-1) == batch.tgt_out)[keep]
        return loss, correct

    def train_step(self) -> StepStats:
        """One optimiser step; raises NonFiniteLossError (weights rolled back) if the loss is not finite."""
        start = time.perf_counter()
        batch = self._next_batch().to(self.device)
        lr = lr_at(self.cfg, self.step, self.elapsed)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.model.train()
        loss, correct = self.loss(batch)
        if not torch.isfinite(loss):
            self._roll_back()
            raise NonFiniteLossError(f"the loss became {loss.item()} at step {self.step + 1}; training stopped "
                                     f"and the weights of the last finite step were kept (try a lower learning rate)")
        torch._foreach_copy_(self._last_good, [p.detach() for p in self.model.parameters()])
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip, foreach=True)
        self.optimizer.step()
        self.step += 1
        self.elapsed += time.perf_counter() - start
        stats = StepStats(self.step, loss.item(), correct.float().mean().item(), lr, int(correct.numel()),
                          self.elapsed)
        self.history.append({"step": stats.step, "loss": stats.loss, "accuracy": stats.accuracy, "lr": lr,
                             "tokens": stats.tokens, "elapsed": round(stats.elapsed, 4)})
        for cb in self.callbacks:
            cb.on_step_end(self, stats)
        return stats

    def _roll_back(self) -> None:
        with torch.no_grad():
            torch._foreach_copy_([p for p in self.model.parameters()], self._last_good)
        self.optimizer.state.clear()  # moments computed from the bad step are not trustworthy

    def run(self, max_steps: int | None = None, max_seconds: float | None = None,
            stop: threading.Event | None = None) -> str:
        """Train until a budget is spent or `stop` is set; returns why it ended."""
        target = self.cfg.max_steps if max_steps is None else max_steps
        seconds = self.cfg.max_seconds if max_seconds is None else max_seconds
        began = time.perf_counter()
        while self.step < target:
            if stop is not None and stop.is_set():
                return "stopped"
            if seconds is not None and time.perf_counter() - began >= seconds:
                return "time budget"
            self.train_step()
            if self.step % self.cfg.eval_every == 0:
                self.evaluate()
            if self.done is not None:
                return self.done
        return "step budget"

    def evaluate(self, n: int | None = None) -> dict[str, Any]:
        """Validation metrics (see `evaluate_model`), recorded in `evals` and sent to callbacks."""
        metrics = evaluate_model(self.model, self.task, n or self.cfg.eval_examples)
        metrics["step"] = self.step
        self.evals.append(metrics)
        for cb in self.callbacks:
            cb.on_eval(self, metrics)
        return metrics


def evaluate_model(model: Network, task: Task, n: int = 500, batch_size: int = 256) -> dict[str, Any]:
    """Loss, token accuracy and greedy exact match on up to n validation examples; sacrebleu BLEU/chrF for words;
    for a stream task (`task.determined`), the teacher-forced greedy accuracy on the tokens each stream determines
    ("determined_accuracy"). An encoder-only model: its masked-token accuracy instead (`evaluate_masked`)."""
    if isinstance(model, EncoderOnlyTransformer):
        return evaluate_masked(model, task, n, batch_size)
    from ..adapters import decode_texts
    from ..analysis import corpus_scores, evaluate_alignment
    from ..model import eval_mode

    examples = task.valid[:n]
    if not examples:
        raise ValueError("the task has no validation examples")
    limit = model.cfg.max_len - 1
    device = next(model.parameters()).device
    total_loss, total_tokens, total_correct = 0.0, 0, 0
    determined_right, determined_total = 0, 0
    with eval_mode(model):
        for i in range(0, len(examples), batch_size):
            chunk = examples[i: i + batch_size]
            targets = [task.tgt_tokenizer.encode(e.target)[:limit] for e in chunk]
            batch = make_batch([task.src_tokenizer.encode(e.source)[:limit] for e in chunk], targets).to(device)
            logits = model(batch.src, batch.tgt_in)
            keep = batch.tgt_out != 0
            total_loss += F.cross_entropy(logits[keep], batch.tgt_out[keep], reduction="sum").item()
            total_correct += int((logits.argmax(-1) == batch.tgt_out)[keep].sum())
            total_tokens += int(keep.sum())
            if task.determined is not None:
                where = [[p for p in task.determined.get(e.target, ()) if p < len(t)]  # a stream cut at max_len
                         for e, t in zip(chunk, targets, strict=True)]  # keeps its earlier ones
                right, asked = _determined_hits(logits, batch.tgt_out, where)
                determined_right, determined_total = determined_right + right, determined_total + asked
    outputs = decode_texts(model, task.src_tokenizer, task.tgt_tokenizer, [e.source for e in examples], batch_size)
    refs = [task.tgt_tokenizer.decode(task.tgt_tokenizer.encode(e.target)) for e in examples]
    metrics: dict[str, Any] = {
        "n": len(examples),
        "loss": total_loss / max(total_tokens, 1),
        "token_accuracy": total_correct / max(total_tokens, 1),
        "exact_match": sum(o == r for o, r in zip(outputs, refs, strict=True)) / len(examples),
    }
    if task.determined is not None and determined_total:
        metrics["determined_accuracy"] = determined_right / determined_total
    if task.level == "word":  # standard scores: detokenized, cased output against the raw reference lines
        metrics.update(corpus_scores(outputs, [e.target for e in examples]))
    aligned = evaluate_alignment(model, examples, task.src_tokenizer, task.tgt_tokenizer, batch_size)
    if aligned is None and isinstance(model, DecoderOnlyTransformer):  # no cross-attention: the rows that predict
        from ..analysis.heads.pair_alignment import prefix_alignment  # each target token, read against the source

        aligned = prefix_alignment(model, examples, task.src_tokenizer, task.tgt_tokenizer, batch_size)
    if aligned is not None:
        metrics["alignment"] = aligned[1]
    metrics["examples"] = [{"source": e.source, "reference": r, "output": o}
                           for e, r, o in list(zip(examples, refs, outputs, strict=True))[:5]]
    return metrics


def _determined_hits(logits: torch.Tensor, labels: torch.Tensor, positions: list[list[int]]) -> tuple[int, int]:
    """How many of each row's determined target positions the logits' argmax gets right, and how many there are."""
    rows = [r for r, where in enumerate(positions) for _ in where]
    cols = [p for where in positions for p in where]
    if not rows:
        return 0, 0
    r, c = torch.tensor(rows, device=labels.device), torch.tensor(cols, device=labels.device)
    return int((logits[r, c].argmax(-1) == labels[r, c]).sum()), len(rows)


def evaluate_masked(model: EncoderOnlyTransformer, task: Task, n: int = 500, batch_size: int = 256) -> dict[str, Any]:
    """An encoder-only model on up to n validation pairs with a share of one sentence masked (the same masks at
    every evaluation, `transformer.data.masking`): loss and accuracy on the masked tokens ("token_accuracy" is the
    masked-token accuracy), the share of pairs with every mask right ("exact_match"), and where the task has gold
    alignments the best head's alignment from a masked token to its counterpart (`analysis.pair_alignment`)."""
    from ..model import eval_mode

    examples = evaluation_examples(task, n, model.cfg.max_len)
    if not examples:
        raise ValueError("the task has no validation examples")
    with eval_mode(model):
        loss, accuracy, whole, predicted = masked_accuracy(model, examples, batch_size)
    tok = task.src_tokenizer
    shown = []
    for e, guess in list(zip(examples, predicted, strict=True))[:5]:
        masked = [i for i, label in enumerate(e.labels) if label]
        words = ["<mask>" if i in masked else tok.id_to_token(t) for i, t in enumerate(e.ids)]
        shown.append({"source": " ".join(words[:-1]),  # "A </s> B", as a user types a pair
                      "reference": " ".join(tok.id_to_token(e.labels[i]) for i in masked),
                      "output": " ".join(tok.id_to_token(g) for g in guess)})
    metrics: dict[str, Any] = {"n": len(examples), "loss": loss, "token_accuracy": accuracy,
                               "masked_accuracy": accuracy, "exact_match": whole, "examples": shown}
    from ..analysis.heads.pair_alignment import masked_pair_alignment

    aligned = masked_pair_alignment(model, examples, [e.alignment for e in task.valid[:n]], batch_size)
    if aligned is not None:  # how often a masked token's best head reads its counterpart in the other sentence
        metrics["alignment"] = aligned[1]
    return metrics
