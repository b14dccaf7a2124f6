"""A site's activations over a corpus, read from the model's own insides (`InspectableModel.insides`, the residual
stream `Insides.residual` and each attention layer's `merged` input to W_O), with the token at each row.

Source-side sites (an encoder's, a decoder-only or encoder-only model's one stack) read the texts in padded
batches, padding left out; an encoder-decoder's decoder sites teacher-force each text's reference (its model's own
greedy output where the corpus has none). Nothing is kept on the model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor

from ..adapters import InspectableModel
from ..model import Insides
from .sites import Place

BATCH = 16  # texts per padded forward
MAX_TOKENS = 200_000  # rows kept at most (the rest of the corpus is left out, and said)


@dataclass(frozen=True)
class Activations:
    """`values` (N, D) at the site, and for each row the text it came from, its 0-based position on the site's
    axis and its token."""

    values: Tensor
    texts: tuple[int, ...]
    positions: tuple[int, ...]
    tokens: tuple[str, ...]
    capped: bool = False  # the corpus had more tokens than were read

    def __len__(self) -> int:
        return int(self.values.shape[0])


def _site_rows(insides: Insides, place: Place, adapter: InspectableModel) -> Tensor:
    """(B, T, D) at the site from one forward's insides."""
    if place.kind is not None:
        merged = insides.inputs[place.kind][place.layer].merged
        if merged is None:
            raise AssertionError(f"{adapter.name}: the attention output of {place.site.label} was not captured")
        return merged
    if place.index is None:
        return adapter.encoder_final_norm(insides.residual["encoder"][-1])
    return insides.residual[place.stack][place.index]


def _decoder_ids(adapter: InspectableModel, text: str, reference: str | None) -> list[int]:
    source = adapter.tokenize_source(text)
    target = reference if reference is not None else adapter.translate([text])[0]
    return [*adapter.decoder_prefix(source), *adapter.target_ids(target)][: adapter.max_target_len]


def site_activations(adapter: InspectableModel, place: Place, texts: Sequence[str],
                     references: Sequence[str] | None = None, max_tokens: int = MAX_TOKENS,
                     progress: Callable[[int, int], None] | None = None) -> Activations:
    """The site's activations at every token of `texts` (at most `max_tokens` rows); `progress(done, total)` after
    each forward."""
    teacher = adapter.family.has_cross and place.stack == "decoder"
    chunks: list[Tensor] = []
    where: list[tuple[int, int, str]] = []
    step = 1 if teacher else BATCH
    n = 0
    with adapter.running(), torch.no_grad():
        for start in range(0, len(texts), step):
            batch = range(start, min(start + step, len(texts)))
            sources = [adapter.tokenize_source(texts[i]) for i in batch]
            ids = [list(s.ids)[: adapter.max_source_len] for s in sources]
            if teacher:
                i = batch[0]
                tgt = _decoder_ids(adapter, texts[i], None if references is None else references[i])
                rows = _site_rows(adapter.insides(torch.tensor([ids[0]]), torch.tensor([tgt])), place, adapter)
                lengths, tokens = [len(tgt)], [adapter.ids_to_tokens(tgt)]
            else:
                rows = _site_rows(adapter.padded_insides(ids), place, adapter)
                lengths, tokens = [len(x) for x in ids], [list(s.tokens)[: len(x)] for s, x in zip(sources, ids,
                                                                                                    strict=True)]
            for b, (i, length) in enumerate(zip(batch, lengths, strict=True)):
                take = min(length, max_tokens - n)
                chunks.append(rows[b, :take].detach().float())
                where += [(i, p, tokens[b][p] if p < len(tokens[b]) else "") for p in range(take)]
                n += take
            if progress is not None:
                progress(batch[-1] + 1, len(texts))
            if n >= max_tokens:
                break
    values = torch.cat(chunks) if chunks else torch.zeros(0, place.width)
    capped = n >= max_tokens and where[-1][0] < len(texts) - 1 if where else False
    return Activations(values, tuple(w[0] for w in where), tuple(w[1] for w in where), tuple(w[2] for w in where),
                       capped)
