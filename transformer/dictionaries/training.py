"""Training a dictionary on a site's activations: Adam on the reconstruction's mean squared error (plus an L1 penalty
on the activations for ReLU), the decoder's rows put back to unit norm after every step (so the penalty cannot
shrink activations by growing directions, Bricken et al. 2023), the decoder initialised from the data's own
centred rows and the encoder as its transpose (Gao et al. 2024), b_dec at the data's mean.

The loop emits one `TrainStep` per `report_every` steps to a callback and stops early when `cancel()` turns True,
so a background job can show progress and offer Cancel; the result is kept either way, its report saying how far
it got. Top-k (Gao et al. 2024) is the default: its L0 is k by construction and it trains without a penalty to
tune. JumpReLU dictionaries are read and used, not trained here.
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

    def __init__(self, data: Tensor, settings: TrainSettings, gen: torch.Generator) -> None:
        super().__init__()
        mean = data.mean(0)
        rows = data[torch.randint(len(data), (settings.features,), generator=gen)] - mean
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


def evaluate(dictionary: Dictionary, data: Tensor, chunk: int = 8192) -> Report:
    """Explained variance, L0 and dead features of `dictionary` over activations `data` (N, D)."""
    if len(data) == 0:
        raise DictionaryError("no activations to measure the dictionary on (an empty corpus?)")
    fired = torch.zeros(dictionary.n_features, dtype=torch.bool)
    err = active = 0.0
    mean = data.mean(0)
    with torch.no_grad():
        for i in range(0, len(data), chunk):
            x = data[i:i + chunk]
            acts = dictionary.encode(x)
            err += float((dictionary.decode(acts) - x).pow(2).sum())
            nonzero = acts > 0
            active += float(nonzero.sum())
            fired |= nonzero.any(0)
        total = float((data - mean).pow(2).sum())
    return Report(1.0 - err / max(total, 1e-12), active / len(data), int((~fired).sum()), len(data))


def train_dictionary(data: Tensor, site: Site, settings: TrainSettings, model: str = "",
                     on_step: Callable[[TrainStep], None] | None = None, cancel: Callable[[], bool] | None = None,
                     report_every: int = 50) -> tuple[Dictionary, Report]:
    """A dictionary trained on activations `data` (N, D) and its report over the same activations."""
    settings.check()
    if len(data) < 2:
        raise DictionaryError(f"{len(data)} activation rows: too few to train a dictionary")
    gen = torch.Generator().manual_seed(settings.seed)
    data = data.float()
    net = _Autoencoder(data, settings, gen)
    scale = float((data - data.mean(0)).pow(2).sum(1).mean())  # the loss is relative to the data's variance
    opt = torch.optim.Adam(net.parameters(), lr=settings.lr, betas=(0.9, 0.999))
    began, step = time.perf_counter(), 0
    for step in range(1, settings.steps + 1):
        if cancel is not None and cancel():
            step -= 1
            break
        x = data[torch.randint(len(data), (min(settings.batch_size, len(data)),), generator=gen)]
        pre = (x - net.b_dec) @ net.w_enc + net.b_enc
        if settings.activation == "topk":
            values, indices = torch.topk(pre, settings.k, dim=-1)
            acts = torch.zeros_like(pre).scatter(-1, indices, values.relu())
        else:
            acts = pre.relu()
        err = (acts @ net.w_dec + net.b_dec - x).pow(2).sum(1).mean() / scale
        loss = err + (settings.l1 * acts.sum(1).mean() / scale ** 0.5 if settings.activation == "relu" else 0.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            net.w_dec.div_(net.w_dec.norm(dim=1, keepdim=True).clamp_min(1e-8))
        if on_step is not None and (step % report_every == 0 or step == settings.steps):
            on_step(TrainStep(step, settings.steps, 1.0 - float(err.detach()), float((acts > 0).sum(1).float().mean()),
                              time.perf_counter() - began))
    dictionary = net.dictionary(site, settings, model)
    report = evaluate(dictionary, data)
    report = Report(report.explained_variance, report.l0, report.dead, report.rows, step, step < settings.steps,
                    time.perf_counter() - began)
    return replace(dictionary, metrics=report.as_metrics()), report
