"""Activation patching: which activation carries the answer from a clean input that an edited (corrupted) one lacks.

Both inputs are fed the clean output's prefix up to the target step (teacher forcing), so the step exists in both.
The metric at that step is log p(clean token) − log p(contrast token) (the logit difference; Heimersheim & Nanda
2024 and Zhang & Nanda 2023 recommend it), or log p(clean token) when no contrast is given. One activation of the
clean run is copied into the corrupted run and the normalised recovery (metric − corrupted) / (clean − corrupted)
says how much of the clean answer comes back: 1 all of it, 0 none (Meng et al. 2022's causal tracing; Wang et al.
2022 patch paths). When clean − corrupted is under `BARELY` nats the edit barely moves the target, and the raw
differences are what is shown.

Positions of inputs of different lengths are matched by the edit-distance alignment (`token_alignment`); positions
with no partner are left unpatched and reported. Runs are batched (`batch` patches per forward); decoder-side patches
of an encoder-decoder reuse the corrupted encoder output. The sites themselves are built in `patching_sites`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor, nn

from ...adapters import InspectableModel, ban
from ...adapters.patching import (
    RESIDUAL,
    Activations,
    Patch,
    patch_points,
    patching,
    recording_activations,
)
from ...decode import InputError, greedy_decode, read_source
from ..attribution.attribution import substituted
from ..compare.token_alignment import TokenAlignment, align_tokens, identity_alignment
from .head_sweep import DEFAULT_BATCH, Progress, Recorder, Replay, _Encoded, layer_paths

BARELY = 0.1  # nats: an edit that moves the metric less than this barely moves the target; no ratio is shown


@dataclass(frozen=True)
class PatchingSetup:
    """The clean and corrupted runs of one patching experiment, their activations and metrics."""

    clean_text: str
    corrupted_text: str
    output: tuple[int, ...]  # the clean greedy output (ids)
    step: int  # 0-based: the output token the metric reads
    token: int  # output[step]
    contrast: int | None  # None: the metric is log p(token)
    src: tuple[Tensor, Tensor]  # source ids (1, S) clean, corrupted
    tgt: tuple[Tensor, Tensor]  # decoder inputs (1, T) clean, corrupted (a decoder-only model's prompt included)
    alignment: dict[str, TokenAlignment]  # per stack: clean positions <-> corrupted positions
    tokens: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]  # per stack: the clean and the corrupted labels
    clean: Activations
    corrupted: Activations
    clean_metric: float
    corrupted_metric: float
    metric_name: str

    @property
    def gap(self) -> float:
        """clean − corrupted: how far the edit moves the metric."""
        return self.clean_metric - self.corrupted_metric

    @property
    def barely(self) -> bool:
        """True when the edit moves the metric less than `BARELY` nats (no recovery ratio is meaningful)."""
        return abs(self.gap) < BARELY

    def recovery(self, metric: float) -> float:
        """(metric − corrupted) / (clean − corrupted); NaN when the edit barely moves the target."""
        return math.nan if self.barely else (metric - self.corrupted_metric) / self.gap

    def unaligned(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """Per stack, the clean and the corrupted positions without a partner (left unpatched)."""
        return {stack: (a.only_a, a.only_b) for stack, a in self.alignment.items() if a.only_a or a.only_b}


def _token_id(adapter: InspectableModel, token: str) -> int:
    """The output id of a token the user typed: the vocabulary's own piece, or text that makes exactly one id."""
    found = adapter.token_to_id(token)
    if found is None:
        ids = adapter.target_ids(token)
        if len(ids) != 1:
            raise InputError(f"The contrast {token!r} is not one output token of this model "
                             f"({'it makes ' + str(len(ids)) + ' tokens' if ids else 'it makes none'}): pick one of "
                             "its output pieces.")
        found = ids[0]
    if found in adapter.unemittable_ids:
        raise InputError(f"The contrast {token!r} is a special token the model never outputs.")
    return int(found)


def metric_of(adapter: InspectableModel, logits: Tensor, token: int, contrast: int | None) -> Tensor:
    """The metric (N,) from the target row of logits (N, V): log p(token) [− log p(contrast)], over what the model
    can emit."""
    logp = ban(logits.float(), sorted(adapter.unemittable_ids)).log_softmax(-1)
    return logp[:, token] - (logp[:, contrast] if contrast is not None else 0.0)


def _record(adapter: InspectableModel, src: Tensor, tgt: Tensor) -> tuple[Tensor, Activations]:
    with adapter.running(), recording_activations(patch_points(adapter)) as acts:
        logits = adapter.teacher_logits(adapter.network, src, tgt)
    return logits[:, -1], acts


def _default_step(adapter: InspectableModel, src: tuple[Tensor, Tensor], prefix: tuple[list[int], list[int]],
                  output: Sequence[int]) -> int:
    """The first step where the corrupted run, fed the clean prefix, would choose another token; else the step
    whose clean token loses most log-probability."""
    drops = []
    with adapter.running():
        for s, p in zip(src, prefix, strict=True):
            logits = adapter.teacher_logits(adapter.network, s, torch.tensor([[*p, *output[:-1]]]))[0, len(p) - 1:]
            drops.append(ban(logits.float(), sorted(adapter.unemittable_ids)).log_softmax(-1))
    targets = torch.tensor(list(output))[:, None]
    changed = (drops[1].argmax(-1) != targets[:, 0]).nonzero()
    if len(changed):
        return int(changed[0])
    return int((drops[0].gather(1, targets) - drops[1].gather(1, targets))[:, 0].argmax())


def prepare_patching(adapter: InspectableModel, clean_text: str, corrupted_text: str, *, step: int | None = None,
                     contrast: str | None = None, output: Sequence[int] | None = None) -> PatchingSetup:
    """Decode the clean input, run both inputs teacher-forced up to `step` (0-based; by default the first step the
    edit changes) and record every patchable activation. Bad input raises InputError with one clear message."""
    if adapter.family.decoder_kind is None:
        raise InputError(f"{adapter.name} writes no output token by token: there is no answer to patch.")
    sources = read_source(adapter, clean_text), read_source(adapter, corrupted_text)
    if sources[0].ids == sources[1].ids:
        raise InputError("The edited input reads the same as the clean one: change at least one word.")
    if output is None:
        output = [s.token_id for s in greedy_decode(adapter, clean_text, top_k=1).steps]
    output = tuple(int(i) for i in output)
    if not output:
        raise InputError("The model produced no output for the clean input, so there is nothing to patch.")
    prefixes = adapter.decoder_prefix(sources[0]), adapter.decoder_prefix(sources[1])
    src = torch.tensor([sources[0].ids]), torch.tensor([sources[1].ids])
    if step is None:
        step = _default_step(adapter, src, prefixes, output)
    if not 0 <= step < len(output):
        raise InputError(f"Step {step + 1} is past the end of the clean output, which has {len(output)} "
                         f"token(s): pick a step from 1 to {len(output)}.")
    longest = max(len(p) for p in prefixes) + step
    if longest > adapter.max_target_len:
        raise InputError(f"The input and the output up to step {step + 1} have {longest} tokens; this model reads "
                         f"at most {adapter.max_target_len}.")
    token = output[step]
    contrast_id = None if contrast is None or contrast == "" else _token_id(adapter, contrast)
    if contrast_id == token:
        raise InputError(f"The contrast {contrast!r} is the clean output's own token at step {step + 1}: pick "
                         "another token.")
    tgt = torch.tensor([[*prefixes[0], *output[:step]]]), torch.tensor([[*prefixes[1], *output[:step]]])
    (clean_logits, clean), (corrupted_logits, corrupted) = _record(adapter, src[0], tgt[0]), _record(adapter, src[1],
                                                                                                     tgt[1])
    metrics = metric_of(adapter, torch.cat([clean_logits, corrupted_logits]), token, contrast_id).tolist()
    done = adapter.ids_to_tokens(output[:step])
    labels = {"decoder": ((*adapter.prefix_tokens(sources[0]), *done), (*adapter.prefix_tokens(sources[1]), *done))}
    if adapter.family.has_cross:
        alignment = {"encoder": align_tokens(sources[0].ids, sources[1].ids),
                     "decoder": identity_alignment(tgt[0].shape[1])}
        labels["encoder"] = (sources[0].tokens, sources[1].tokens)
    else:
        alignment = {"decoder": align_tokens(prefixes[0], prefixes[1]).shifted(step)}
    name = adapter.id_to_token(token)
    metric_name = (f"log p({name!r})" if contrast_id is None else
                   f"log p({name!r}) − log p({adapter.id_to_token(contrast_id)!r})")
    return PatchingSetup(clean_text, corrupted_text, output, step, token, contrast_id, src, tgt, alignment,
                         labels, clean, corrupted, metrics[0], metrics[1], metric_name)


class _Memory(_Encoded):
    """A batch of encoder outputs (N, S, D) the decoder reads in place of the corrupted one (encoder-output sites)."""

    def __init__(self, base: _Encoded, memory: Tensor) -> None:
        self.adapter, self.src, self.state = base.adapter, base.src, memory
        self.mask = base.mask.expand(memory.shape[0], -1) if isinstance(base.mask, Tensor) and base.mask.dim() == 2 \
            else base.mask


class _LastRow(nn.Module):
    """An output projection that projects only the last position (the metric reads nothing else): (N, 1, V)."""

    def __init__(self, projection: nn.Module) -> None:
        super().__init__()
        self.projection = projection

    def forward(self, x: Tensor) -> Tensor:
        return self.projection(x[:, -1:])


def _lowest_layer(row: Sequence[Patch]) -> int:
    """The first layer a row's patches make run differently (the layers before it can be replayed)."""
    return min((max(p.index - 1, 0) if p.point == RESIDUAL else p.index for p in row), default=0)


def _group(adapter: InspectableModel, row: Sequence[Patch], n_encoder: int) -> int:
    """0: only the encoder's output (the decoder reads a built memory), 1: the decoder side only (the corrupted
    encoder output is reused), 2: the encoder runs."""
    if not adapter.family.has_cross:
        return 2
    encoder_side = {"encoder", adapter.family.encoder_kind}
    if row and all(p.point == RESIDUAL and p.where == "encoder" and p.index == n_encoder for p in row):
        return 0
    return 2 if any(p.where in encoder_side for p in row) else 1


def _recorded_layers(adapter: InspectableModel, src: Tensor, tgt: Tensor) -> tuple[dict | None, dict[str, object]]:
    """The layers' dotted paths per stack (None where they cannot be replayed) and their outputs on the corrupted
    run; call inside `adapter.running()`."""
    layers = layer_paths(adapter) if adapter.family.has_cross else None
    recorded: dict[str, object] = {}
    if layers is not None:
        view = substituted(adapter.network, {path: Recorder(adapter.network.get_submodule(path), recorded, path)
                                             for side in layers.values() for path in side})
        adapter.teacher_logits(view, src, tgt)
    return layers, recorded


def patched_metrics(adapter: InspectableModel, setup: PatchingSetup, rows: Sequence[Sequence[Patch]], *,
                    batch: int = DEFAULT_BATCH, progress: Progress | None = None) -> list[float]:
    """The corrupted run's metric with each row's patches written (one row, one patched run; [] patches nothing);
    `batch` runs per forward. Rows that touch no encoder activation reuse the corrupted encoder output, rows that
    write only the encoder's output give the decoder a built memory (the encoder's final norm works position by
    position), and the layers before a row's first patched one return their recorded output (as the head sweep)."""
    points, counts = patch_points(adapter), {k: h for k, (_, h) in adapter.head_counts().items()}
    src, tgt = setup.src[1], setup.tgt[1]
    n_encoder = len(setup.clean.residual["encoder"]) - 1 if "encoder" in setup.clean.residual else -1
    key = {i: (_group(adapter, rows[i], n_encoder), _lowest_layer(rows[i])) for i in range(len(rows))}
    order = sorted(range(len(rows)), key=key.__getitem__)
    out: dict[int, float] = {}
    with adapter.running():
        encoded = _Encoded(adapter, src) if adapter.family.has_cross else None
        layers, recorded = _recorded_layers(adapter, src, tgt)
        head_path = adapter.output_path()
        last_row = substituted(adapter.network, {head_path: _LastRow(adapter.network.get_submodule(head_path))})
        for first in range(0, len(order), batch):
            chunk = order[first: first + batch]
            for group in sorted({key[i][0] for i in chunk}):
                members = [i for i in chunk if key[i][0] == group]
                n = len(members)
                if group == 0:  # the encoder's output: its rows written into a batch of corrupted memories
                    assert encoded is not None  # groups 0 and 1 come with an encoder (`_group`)
                    memory = encoded.state.expand(n, *encoded.state.shape[1:]).clone()
                    for r, i in enumerate(members):
                        for p in rows[i]:
                            memory[r, list(p.positions)] = adapter.encoder_final_norm(p.value.to(memory.dtype))
                    logits = _Memory(encoded, memory).logits(last_row, tgt.expand(n, -1))
                else:
                    replay: dict[str, nn.Module] = {head_path: _LastRow(adapter.network.get_submodule(head_path))}
                    if layers is not None:
                        lowest = min(key[i][1] for i in members)
                        side = layers["encoder" if group == 2 else "decoder"]
                        replay.update({path: Replay(adapter.network.get_submodule(path), recorded[path], n)
                                       for path in side[:lowest]})
                    view = substituted(adapter.network, replay)
                    patches = [replace(p, row=r) for r, i in enumerate(members) for p in rows[i]]
                    with patching(points, patches, counts):
                        if group == 1:
                            assert encoded is not None
                            logits = encoded.logits(view, tgt.expand(n, -1))
                        else:
                            logits = adapter.teacher_logits(view, src.expand(n, -1), tgt.expand(n, -1))
                values = metric_of(adapter, logits[:, -1], setup.token, setup.contrast).tolist()
                out.update(zip(members, values, strict=True))
            if progress is not None:
                progress(min(1.0, (first + len(chunk)) / max(len(order), 1)))
    return [out[i] for i in range(len(rows))]
