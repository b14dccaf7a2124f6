"""A decode's residual path, captured once and kept: the greedy decode of a text, then one teacher-forced forward over
the tokens it read with everything the residual parts need (`capture_path`), and each axis's tokens. The QK table,
the routes and the CLI read positions on it: 0-based here, 1-based where a user types them."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...adapters import InspectableModel, ResidualPathError
from ...decode import greedy_decode
from ...model import SOURCE
from .residual_parts import PathCapture, capture_path


@dataclass(frozen=True)
class DecodeParts:
    """The capture of one decode: `source_tokens` (the encoder's input; a decoder-only model's prompt),
    `decoder_tokens` (every decoder input read, start tokens included), `n_prefix` (decoder inputs before the
    first output), the outputs, and each kind's axes."""

    capture: PathCapture
    source_tokens: tuple[str, ...]
    decoder_tokens: tuple[str, ...]
    n_prefix: int
    outputs: tuple[str, ...]
    axes: dict[str, tuple[str, str]]

    def tokens(self, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query tokens, key tokens) of `kind`."""
        q_axis, k_axis = self.axes[kind]
        return (self.source_tokens if q_axis == SOURCE else self.decoder_tokens,
                self.source_tokens if k_axis == SOURCE else self.decoder_tokens)

    @property
    def n_steps(self) -> int:
        return len(self.outputs)

    def step_row(self, step: int) -> int:
        """The decoder position (0-based) whose output is the `step`-th output token (1-based)."""
        if not self.decoder_tokens:
            raise ResidualPathError(f"{self.capture.model} is an encoder-only model: it has no decode steps")
        if not 1 <= step <= self.n_steps:
            raise ResidualPathError(f"step {step} does not exist: the decode has steps 1-{self.n_steps}")
        return self.n_prefix - 1 + step - 1


def decode_parts(adapter: InspectableModel, text: str, *, step: int | None = None, max_steps: int | None = None
                 ) -> DecodeParts:
    """The greedy decode of `text` (an encoder-only model: its one forward pass over `text`) captured for the
    residual parts; with `step` (1-based) the decoder reads up to the position that produces that step's token."""
    adapter.residual_path()  # refuse a family the parts do not cover before decoding
    source = adapter.tokenize_source(text)
    if not adapter.family.decodes:
        if step is not None:
            raise ResidualPathError(f"{adapter.name} is an encoder-only model: it has no decode steps (--step)")
        cap = capture_path(adapter, torch.tensor([list(source.ids)]), None)
        return DecodeParts(cap, tuple(source.tokens), (), 0, (), dict(adapter.family.axes))
    result = greedy_decode(adapter, text, top_k=1, max_steps=max_steps)
    prefix = adapter.decoder_prefix(source)
    outputs = [s.token_id for s in result.steps]
    if step is not None and not 1 <= step <= len(outputs):
        raise ResidualPathError(f"step {step} does not exist: the decode of this text has steps 1-{len(outputs)}")
    read = [*prefix, *outputs][: len(prefix) - 1 + (step if step is not None else len(outputs))]
    read = read or list(prefix)
    cap = capture_path(adapter, torch.tensor([list(source.ids)]), torch.tensor([read]))
    labels = (*adapter.prefix_tokens(source), *adapter.ids_to_tokens(read[len(prefix):]))[: len(read)]
    return DecodeParts(cap, tuple(source.tokens), tuple(labels), len(prefix),
                       tuple(adapter.ids_to_tokens(outputs)), dict(adapter.family.axes))
