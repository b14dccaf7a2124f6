"""A dictionary: a sparse autoencoder on one site, its features the rows of its decoder (0-based ids).

The encoder is SAELens's (`sae_lens.saes`, 6.54.12): `pre = (x - b_dec) @ W_enc + b_enc` (b_dec subtracted when
`apply_b_dec_to_input`), then ReLU (`standard`), ReLU of the k largest with the rest 0 (`topk`), or ReLU where
`pre > threshold` (`jumprelu`); the decoder is `acts @ W_dec + b_dec`. A dictionary trained here has unit-norm
decoder rows, so a feature's activation is the length it writes along its direction; one read from a file keeps its
weights as they are, so its activations are SAELens's for the same file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

import torch
from torch import Tensor

from .sites import DictionaryError, Site

ACTIVATIONS = ("relu", "topk", "jumprelu")  # SAELens's architectures standard, topk, jumprelu


@dataclass(frozen=True)
class Dictionary:
    """Weights as SAELens holds them: `w_enc` (D, F), `b_enc` (F,), `w_dec` (F, D), `b_dec` (D,); `threshold` (F,)
    for jumprelu, `k` for topk; `site` where it reads, `model` what it was trained on, `metrics` its report
    (explained variance, L0, dead features; empty for an untrained one)."""

    site: Site
    w_enc: Tensor
    b_enc: Tensor
    w_dec: Tensor
    b_dec: Tensor
    activation: str = "relu"
    k: int | None = None
    threshold: Tensor | None = None
    apply_b_dec_to_input: bool = True
    model: str = ""
    metrics: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        d, f = self.w_enc.shape
        if self.w_dec.shape != (f, d) or self.b_enc.shape != (f,) or self.b_dec.shape != (d,):
            raise DictionaryError(f"the weights do not fit together: W_enc {tuple(self.w_enc.shape)}, W_dec "
                                  f"{tuple(self.w_dec.shape)}, b_enc {tuple(self.b_enc.shape)}, b_dec "
                                  f"{tuple(self.b_dec.shape)}")
        if self.activation not in ACTIVATIONS:
            raise DictionaryError(f"unknown activation {self.activation!r}: one of {', '.join(ACTIVATIONS)}")
        if self.activation == "topk" and not (isinstance(self.k, int) and 1 <= self.k <= f):
            raise DictionaryError(f"a top-k dictionary needs k from 1 to its {f} features, not {self.k!r}")
        if self.activation == "jumprelu" and (self.threshold is None or self.threshold.shape != (f,)):
            raise DictionaryError(f"a JumpReLU dictionary needs a threshold per feature ({f})")

    @property
    def d_in(self) -> int:
        return int(self.w_enc.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.w_enc.shape[1])

    @property
    def trained(self) -> bool:
        """Whether it carries a training report (an untrained dictionary says so wherever it is shown)."""
        return "explained_variance" in self.metrics

    def pre_activations(self, x: Tensor) -> Tensor:
        """(..., D) -> (..., F): the encoder before its activation."""
        x = x.to(self.w_enc.dtype)
        if self.apply_b_dec_to_input:
            x = x - self.b_dec
        return x @ self.w_enc + self.b_enc

    def activate(self, pre: Tensor) -> Tensor:
        """The activation applied to pre-activations (..., F)."""
        if self.activation == "topk":
            assert self.k is not None
            values, indices = torch.topk(pre, k=self.k, dim=-1, sorted=False)
            return torch.zeros_like(pre).scatter_(-1, indices, values.relu())
        acts = pre.relu()
        if self.activation == "jumprelu":
            assert self.threshold is not None
            acts = acts * (pre > self.threshold).to(acts.dtype)
        return acts

    def encode(self, x: Tensor) -> Tensor:
        """Feature activations (..., F) of site activations (..., D)."""
        return self.activate(self.pre_activations(x))

    def decode(self, acts: Tensor) -> Tensor:
        """The reconstruction (..., D) of feature activations (..., F)."""
        return acts @ self.w_dec + self.b_dec

    def names_model(self, model: str) -> bool:
        """Whether the dictionary says it was trained on `model`: the same name, or the same last part of it (a
        Hugging Face folder given to the CLI by its path and shown by the app under its folder's name)."""
        return bool(self.model) and (self.model == model or PurePath(self.model).name == PurePath(model).name)

    def check_width(self, width: int, model: str) -> None:
        """DictionaryError in one line unless the dictionary reads `width`-wide activations."""
        if width != self.d_in:
            raise DictionaryError(f"this dictionary reads {self.d_in}-wide activations at {self.site.label}; "
                                  f"{model} has {width} there")

    def check_feature(self, feature: int) -> int:
        """`feature` itself, or DictionaryError naming the dictionary's 0-based ids."""
        if isinstance(feature, bool) or not isinstance(feature, int) or not 0 <= feature < self.n_features:
            raise DictionaryError(f"no feature {feature!r}: this dictionary's features are 0-{self.n_features - 1}")
        return feature
