"""Training a dictionary on a site's activations: Adam on the reconstruction's mean squared error (plus an L1 penalty
on the activations for ReLU), the decoder's rows put back to unit norm after every step (so the penalty cannot
shrink activations by growing directions, Bricken et al. 2023), the decoder initialised from the data's own
centred rows and the encoder as its transpose (Gao et al. 2024), b_dec at the data's mean.

The loop emits one `TrainStep` per `report_every` steps to a callback and stops early when `cancel()` turns True,
so a background job can show progress and offer Cancel; the result is kept either way, its report saying how far
it got. Top-k (Gao et al. 2024) is the default: its L0 is k by construction and it trains without a penalty to
tune. JumpReLU dictionaries are read and used, not trained here.

Spread over processes (`RowShard`: torchrun, `transformer.dictionaries.job_rows`), each process holds a contiguous
share of the rows; every process draws the same global batch indices and computes on the rows it holds, the
gradients (and the statistics: mean, variance, the report's sums) summed over the processes, so every process takes
the same Adam step a single process would take on all the rows (to the float's rounding).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

import torch
from torch import Tensor, nn

from .dictionary import Dictionary
from .sites import DictionaryError, Site

TRAINABLE = ("topk", "relu")


@dataclass(frozen=True)
class TrainSettings:
    """What to train: `features` (F), `activation` (topk or relu), `k` (top-k), `l1` (ReLU's penalty, relative to
    the data's variance), `steps`, `batch_size` rows a step, `lr`, `seed`."""

    features: int
    activation: str = "topk"
    k: int = 8
    l1: float = 3e-3
    steps: int = 2000
    batch_size: int = 1024
    lr: float = 2e-3
    seed: int = 0

    def check(self) -> None:
        """DictionaryError in one line for a setting that cannot train."""
        if self.activation not in TRAINABLE:
            raise DictionaryError(f"the studio trains {' or '.join(TRAINABLE)} dictionaries, not {self.activation!r}")
        if not 1 <= self.features <= 1 << 20:
            raise DictionaryError(f"--features {self.features}: from 1 to {1 << 20:,}")
        if self.activation == "topk" and not 1 <= self.k <= self.features:
            raise DictionaryError(f"--k {self.k}: from 1 to the {self.features} features")
        if self.steps < 1 or self.batch_size < 1 or not self.lr > 0 or self.l1 < 0:
            raise DictionaryError("steps, batch size and learning rate must be positive, the L1 penalty not negative")


@dataclass(frozen=True)
class RowShard:
    """This process's rows of activations spread over a job's processes: rows [start, start + its rows) of `total`;
    `reduce` sums a tensor over the processes in place (one process: nothing to sum)."""

    start: int
    total: int
    reduce: Callable[[Tensor], None] = lambda tensor: None

    @classmethod
    def whole(cls, rows: int) -> RowShard:
        """One process holding every row."""
        return cls(0, rows)

    def local(self, data: Tensor, rows: Tensor) -> Tensor:
        """The rows among the global indices `rows` that this process holds (in the order drawn)."""
        mine = (rows >= self.start) & (rows < self.start + len(data))
        return data[rows[mine] - self.start]

    def summed(self, tensor: Tensor) -> Tensor:
        """`tensor` summed over the processes."""
        self.reduce(tensor)
        return tensor


@dataclass(frozen=True)
class TrainStep:
    """Progress: `step` of `steps`, the batch's explained variance and L0, seconds so far."""

    step: int
    steps: int
    explained_variance: float
    l0: float
    seconds: float


@dataclass(frozen=True)
class Report:
    """A dictionary's reconstruction over activations: explained variance (1 - residual variance / variance), mean
    L0 (active features a row), dead features (never active), rows read; `steps` trained, `cancelled`."""

    explained_variance: float
    l0: float
    dead: int
    rows: int
    steps: int = 0
    cancelled: bool = False
    seconds: float = 0.0

    def as_metrics(self) -> dict[str, float]:
        """The numbers kept in the dictionary's file."""
        return {"explained_variance": self.explained_variance, "l0": self.l0, "dead_features": float(self.dead),
                "rows": float(self.rows), "steps": float(self.steps)}

    def line(self, n_features: int) -> str:
        """'explained variance 0.953, L0 8.0, dead 3 of 512 (0.6 %), 40,000 rows'."""
        cut = f", cancelled at step {self.steps}" if self.cancelled else ""
        return (f"explained variance {self.explained_variance:.3f}, L0 {self.l0:.1f}, dead {self.dead} of "
                f"{n_features} ({100 * self.dead / max(n_features, 1):.1f} %), {self.rows:,} rows{cut}")


class _Autoencoder(nn.Module):
    """The trainable weights (SAELens's layout)."""

    def __init__(self, data: Tensor, settings: TrainSettings, gen: torch.Generator, shard: RowShard) -> None:
        super().__init__()
        mean = shard.summed(data.sum(0)) / shard.total
        picked = torch.randint(shard.total, (settings.features,), generator=gen)
        rows = torch.zeros(settings.features, data.shape[1])
        mine = (picked >= shard.start) & (picked < shard.start + len(data))
        rows[mine] = data[picked[mine] - shard.start]
        rows = shard.summed(rows) - mean
        rows = rows + 0.1 * rows.norm(dim=1, keepdim=True).mean() * torch.randn(rows.shape, generator=gen) / (
            rows.shape[1] ** 0.5)
        w_dec = rows / rows.norm(dim=1, keepdim=True).clamp_min(1e-8)
        self.w_dec = nn.Parameter(w_dec)
        self.w_enc = nn.Parameter(w_dec.T.clone())
        self.b_enc = nn.Parameter(torch.zeros(settings.features))
        self.b_dec = nn.Parameter(mean.clone())

    def dictionary(self, site: Site, settings: TrainSettings, model: str) -> Dictionary:
        return Dictionary(site, self.w_enc.detach().clone(), self.b_enc.detach().clone(),
                          self.w_dec.detach().clone(), self.b_dec.detach().clone(), settings.activation,
                          settings.k if settings.activation == "topk" else None, model=model)


def evaluate(dictionary: Dictionary, data: Tensor, chunk: int = 8192, shard: RowShard | None = None) -> Report:
    """Explained variance, L0 and dead features of `dictionary` over activations `data` (N, D) (spread over a job's
    processes: `shard`, every process gets the whole report)."""
    shard = shard or RowShard.whole(len(data))
    if shard.total == 0:
        raise DictionaryError("no activations to measure the dictionary on (an empty corpus?)")
    fired = torch.zeros(dictionary.n_features)
    sums = torch.zeros(3, dtype=torch.float64)  # squared error, active features, squared deviation from the mean
    mean = shard.summed(data.sum(0)) / shard.total
    with torch.no_grad():
        for i in range(0, len(data), chunk):
            x = data[i:i + chunk]
            acts = dictionary.encode(x)
            sums[0] += float((dictionary.decode(acts) - x).pow(2).sum())
            nonzero = acts > 0
            sums[1] += float(nonzero.sum())
            fired += nonzero.any(0).float()
        sums[2] = float((data - mean).pow(2).sum())
    err, active, total = shard.summed(sums).tolist()
    dead = int((shard.summed(fired) == 0).sum())
    return Report(1.0 - err / max(total, 1e-12), active / shard.total, dead, shard.total)


def _sum_gradients(net: nn.Module, shard: RowShard) -> None:
    """Every parameter's gradient summed over the job's processes (one call for all of them)."""
    params = list(net.parameters())
    flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in params])
    shard.reduce(flat)
    for p, g in zip(params, flat.split([p.numel() for p in params]), strict=True):
        p.grad = g.view_as(p)


def train_dictionary(data: Tensor, site: Site, settings: TrainSettings, model: str = "",
                     on_step: Callable[[TrainStep], None] | None = None, cancel: Callable[[], bool] | None = None,
                     report_every: int = 50, shard: RowShard | None = None) -> tuple[Dictionary, Report]:
    """A dictionary trained on activations `data` (N, D) and its report over the same activations; `shard`: this
    process's share of rows spread over a job's processes (every process returns the same dictionary; `cancel` is
    then asked of each process alike, so a job gives none)."""
    settings.check()
    distributed = shard is not None
    shard = shard or RowShard.whole(len(data))
    if shard.total < 2:
        raise DictionaryError(f"{shard.total} activation rows: too few to train a dictionary")
    gen = torch.Generator().manual_seed(settings.seed)
    data = data.float()
    net = _Autoencoder(data, settings, gen, shard)
    scale = float(shard.summed((data - net.b_dec.detach()).pow(2).sum()[None])) / shard.total  # the data's variance
    opt = torch.optim.Adam(net.parameters(), lr=settings.lr, betas=(0.9, 0.999))
    began, step = time.perf_counter(), 0
    batch = min(settings.batch_size, shard.total)
    for step in range(1, settings.steps + 1):
        if cancel is not None and cancel():
            step -= 1
            break
        x = shard.local(data, torch.randint(shard.total, (batch,), generator=gen))
        pre = (x - net.b_dec) @ net.w_enc + net.b_enc
        if settings.activation == "topk":
            values, indices = torch.topk(pre, settings.k, dim=-1)
            acts = torch.zeros_like(pre).scatter(-1, indices, values.relu())
        else:
            acts = pre.relu()
        err = (acts @ net.w_dec + net.b_dec - x).pow(2).sum() / (batch * scale)  # this process's part of the mean
        loss = err + (settings.l1 * acts.sum() / (batch * scale ** 0.5) if settings.activation == "relu" else 0.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if distributed:
            _sum_gradients(net, shard)
        opt.step()
        with torch.no_grad():
            net.w_dec.div_(net.w_dec.norm(dim=1, keepdim=True).clamp_min(1e-8))
        if (on_step is not None or distributed) and (step % report_every == 0 or step == settings.steps):
            seen = shard.summed(torch.tensor([float(err.detach()), float((acts > 0).sum())]))  # every process sums
            if on_step is not None:
                on_step(TrainStep(step, settings.steps, 1.0 - float(seen[0]), float(seen[1]) / batch,
                                  time.perf_counter() - began))
    dictionary = net.dictionary(site, settings, model)
    report = evaluate(dictionary, data, shard=shard)
    report = Report(report.explained_variance, report.l0, report.dead, report.rows, step, step < settings.steps,
                    time.perf_counter() - began)
    return replace(dictionary, metrics=report.as_metrics()), report
