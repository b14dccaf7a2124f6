"""The decoder's residual stream recorded as a decode runs, one row per step, for the logit lens
(`transformer.analysis.why.lens`): after the decode, any step's lens is a lookup and one output-head call.

Why record during the decode rather than run one teacher-forced `insides` pass over the output afterwards: the
recorded rows are exactly what the decode's own steps computed (cached keys and values, the same kernels), so the
last layer's lens is the step's distribution itself, not a recomputation that agrees only to rounding; and the
recording keeps references to tensors the step computes anyway, so the decode costs about the same
(bench/speed/lens.py, bench/README.md). Where the adapter's cache records the stream itself (`record_in_cache`: our
encoder-decoder, whose hook-free `StepPlan` appends each layer's output to a list in the decode's cache) no hook is
put on the model; elsewhere hooks on the decoder's layers record it (`recording_calls`).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..adapters import InspectableModel, recording_calls


@dataclass(frozen=True, eq=False)
class Residuals:
    """Per decode step, the decoder's residual stream at the position that predicted the step's token, and which
    ids the step could not emit (what `constrain` set to -inf: left out of every layer's lens)."""

    decoder: Tensor  # (steps, layers + 1, D): i = 0 the embeddings, i = n after layer n, before the final norm
    banned: tuple[Tensor, ...]  # per step, the ids (int64) the model's rules banned there

    def __post_init__(self) -> None:
        if self.decoder.dim() != 3 or self.decoder.shape[0] != len(self.banned):
            raise ValueError(f"residuals {tuple(self.decoder.shape)} do not fit {len(self.banned)} steps")

    @property
    def n_layers(self) -> int:
        """Decoder layers (the stream has one more row: the embeddings)."""
        return self.decoder.shape[1] - 1

    def nbytes(self) -> int:
        return self.decoder.numel() * self.decoder.element_size() + sum(b.numel() * 8 for b in self.banned)


class ResidualRecorder:
    """Records the decoder's stream call by call while `recording()` is open; `note(logits)` after each step keeps
    that step's row (the last position of the newest call) and the ids its constrained logits ban."""

    def __init__(self, adapter: InspectableModel, last_only: bool = False) -> None:
        self.adapter = adapter
        self.last_only = last_only  # hooks keep each call's last position only (a long prefill: one row per layer)
        self._rows: list[Tensor] = []
        self._banned: list[Tensor] = []
        self._calls: list[list[Tensor]] | None = None

    @contextmanager
    def recording(self, cache: Any) -> Iterator[ResidualRecorder]:
        """For the decode with `cache` (inside `adapter.running()`): the cache's own record where the adapter offers
        one, else hooks on the decoder's layers, removed in `finally`."""
        own = self.adapter.record_in_cache(cache)
        if own is not None:
            self._calls = own
            try:
                yield self
            finally:
                self._calls = None
            return
        with recording_calls({"decoder": self.adapter.residual_layers()["decoder"]}, self.last_only) as found:
            self._calls = found["decoder"]
            try:
                yield self
            finally:
                self._calls = None

    def note(self, constrained: Tensor) -> None:
        """Keep the newest decoder call's last row and the ids `constrained` (V,) sets to -inf."""
        if not self._calls or len(self._calls[-1]) < 2:
            raise RuntimeError("no decoder call was recorded for this step")
        self._rows.append(torch.stack([r[0, -1] for r in self._calls[-1]]))  # (L + 1, D), the model's dtype
        self._calls.clear()  # earlier calls (a prefill's) are not needed: keep memory flat
        self._banned.append(torch.nonzero(constrained == float("-inf")).flatten())

    def result(self) -> Residuals:
        if not self._rows:
            raise RuntimeError("no step was recorded")
        return Residuals(torch.stack(self._rows), tuple(self._banned))
