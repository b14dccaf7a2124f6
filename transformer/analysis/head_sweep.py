"""Every head's effect at scale: exact ablations run many at a time, and a one-pass first-order estimate.

Both work on a *view* of the model (`substituted`): each attention's output projection is swapped for a
`ScaledProjection` that multiplies its input, the concatenated head outputs, by a per-example scale before the
projection's own weights — the same rule as the head mask, one mask per row of the batch. Nothing is put on the
shared model. Heads of the decoder (self and cross) leave the encoder untouched, so its output is computed once and
reused for all of them. `dtype=torch.bfloat16` runs the ablations under CPU autocast (see `BF16_TOLERANCE`).

The estimate is attribution patching (Nanda 2023; Syed et al. 2023): with a scale alpha = 1 on every head,
d log p(output) / d alpha_h is gradient x activation at the head's output, and the drop when the head is switched
off (alpha_h = 0) is, to first order, that derivative. One forward and one backward give every head's estimate.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Callable, Sequence

import torch
from torch import Tensor, nn

from ..decode import KINDS, ban
from ..model import InspectableSeq2Seq
from .attribution import substituted

Progress = Callable[[float], None]  # fraction done, 0..1; may raise `Cancelled` to stop the work
BF16_TOLERANCE = 0.05  # bf16 drops stay within 0.05 nats + 5% of the fp32 drop (tests/test_head_sweep.py)
DEFAULT_BATCH = 16  # ablations per forward pass


class Cancelled(Exception):
    """Raised by a progress callback (the app's Cancel button) to stop a sweep or an estimate."""


class ScaledProjection(nn.Module):
    """An output projection whose input (B, T, heads * head_dim) is first multiplied by `scale` (B or 1, 1, same)."""

    def __init__(self, projection: nn.Module, scale: Tensor) -> None:
        super().__init__()
        self.projection, self.scale = projection, scale

    def forward(self, x: Tensor, *args: object, **kwargs: object) -> Tensor:
        return self.projection(x * self.scale.to(x.dtype), *args, **kwargs)


def projection_paths(lm: InspectableSeq2Seq) -> dict[str, list[str]]:
    """Dotted paths in `lm.network` of every attention's output projection, per kind and layer."""
    network = lm.network
    names = {id(m): n for n, m in network.named_modules()}
    if hasattr(network, "get_encoder"):  # Hugging Face encoder-decoders
        from ..model.hf_seq2seq import attention_outputs
        return {k: [names[id(m)] for m in mods] for k, mods in attention_outputs(network).items()}
    return {"encoder_self": [f"encoder.{i}.self_attn.out_proj" for i in range(len(network.encoder))],
            "decoder_self": [f"decoder.{i}.self_attn.out_proj" for i in range(len(network.decoder))],
            "cross": [f"decoder.{i}.cross_attn.out_proj" for i in range(len(network.decoder))]}


def scaled_view(lm: InspectableSeq2Seq, scales: dict[str, Tensor]) -> nn.Module:
    """A view of the network whose heads of each kind are scaled by scales[kind] (N, layers, heads)."""
    paths = projection_paths(lm)
    replacements = {}
    for kind, scale in scales.items():
        for layer, path in enumerate(paths[kind]):
            proj = lm.network.get_submodule(path)
            per_head = scale[:, layer]  # (N, H)
            wide = per_head.repeat_interleave(proj.in_features // per_head.shape[1], dim=1)  # (N, H * Dh)
            replacements[path] = ScaledProjection(proj, wide[:, None, :])
    return substituted(lm.network, replacements)


def _log_probs(lm: InspectableSeq2Seq, logits: Tensor, targets: Tensor) -> Tensor:
    """(N, positions, V) logits -> (N,) sum of log p(targets) over the output steps, as decoding scores them."""
    rows = ban(logits[:, len(lm.start_ids) - 1:].float(), sorted(lm.unemittable_ids))
    return rows.log_softmax(-1).gather(-1, targets.expand(rows.shape[0], -1)[..., None])[..., 0].sum(-1)


class _Encoded:
    """The encoder's output for one source, reused by every decoder-side ablation (ours and Hugging Face's)."""

    def __init__(self, lm: InspectableSeq2Seq, src: Tensor) -> None:
        self.lm, self.src, net = lm, src, lm.network
        if hasattr(net, "get_encoder"):
            self.mask = torch.ones_like(src)
            self.state = net.get_encoder()(input_ids=src, attention_mask=self.mask, return_dict=True)[0]
        else:
            self.state, self.mask = net.encode(src)

    def logits(self, view: nn.Module, tgt: Tensor) -> Tensor:
        n = tgt.shape[0]
        memory = self.state.expand(n, *self.state.shape[1:])
        if hasattr(view, "get_encoder"):
            return view(encoder_outputs=(memory,), attention_mask=self.mask.expand(n, -1), decoder_input_ids=tgt,
                        use_cache=False, return_dict=True).logits
        return view.decode(tgt, memory, self.mask)


def masked_log_probs(lm: InspectableSeq2Seq, src: Tensor, tgt_in: Tensor, targets: Tensor,
                     masks: dict[str, Tensor], encoded: _Encoded | None = None) -> Tensor:
    """log p(targets) (N,) for N head masks at once (kind -> (N, layers, heads)); with `encoded`, only decoder
    kinds may be masked and the encoder's output is reused. Call inside `lm.running()`."""
    n = next(iter(masks.values())).shape[0]
    view = scaled_view(lm, masks)
    if encoded is not None:
        if "encoder_self" in masks:
            raise ValueError("encoder heads change the encoder's output: it cannot be reused")
        return _log_probs(lm, encoded.logits(view, tgt_in.expand(n, -1)), targets)
    return _log_probs(lm, lm.teacher_logits(view, src.expand(n, -1), tgt_in.expand(n, -1)), targets)


def sweep_log_probs(lm: InspectableSeq2Seq, src: Tensor, tgt_in: Tensor, targets: Tensor,
                    heads: Sequence[tuple[str, int, int]], *, batch: int = DEFAULT_BATCH,
                    dtype: torch.dtype | None = None, progress: Progress | None = None,
                    time_cap: float | None = None) -> tuple[float, dict[int, float]]:
    """(intact log p, {index in `heads`: log p with that head off}), `batch` ablations per pass, decoder heads
    first; heads are missing when `time_cap` seconds passed (checked between passes). `progress` gets the
    fraction done after each pass."""
    counts = lm.head_counts()
    start = time.perf_counter()
    autocast = torch.autocast("cpu", dtype=dtype) if dtype is not None else nullcontext()
    results: dict[int, float] = {}
    with lm.running(), autocast:
        base = float(_log_probs(lm, lm.teacher_logits(lm.network, src, tgt_in), targets)[0])
        encoded = _Encoded(lm, src)
        order = sorted(range(len(heads)), key=lambda i: heads[i][0] == "encoder_self")  # decoder heads first
        for first in range(0, len(order), batch):
            if time_cap is not None and time.perf_counter() - start > time_cap:
                break
            chunk = order[first: first + batch]
            groups: dict[bool, list[int]] = {}
            for i in chunk:
                groups.setdefault(heads[i][0] == "encoder_self", []).append(i)
            for on_encoder, members in groups.items():
                kinds = {heads[i][0] for i in members}
                masks = {k: torch.ones(len(members), *counts[k]) for k in kinds}
                for row, i in enumerate(members):
                    kind, layer, head = heads[i]
                    masks[kind][row, layer, head] = 0.0
                lp = masked_log_probs(lm, src, tgt_in, targets, masks, None if on_encoder else encoded)
                results.update(zip(members, lp.float().tolist()))
            if progress is not None:
                progress(min(1.0, (first + len(chunk)) / len(order)))
    return base, results


def head_gradients(lm: InspectableSeq2Seq, src: Tensor, tgt_in: Tensor, targets: Tensor,
                   kinds: Sequence[str] = KINDS) -> tuple[float, dict[str, Tensor]]:
    """(log p(targets), kind -> (layers, heads) d log p / d head scale at 1): one forward and one backward.

    Only the head scales get gradients (`torch.autograd.grad`), so no parameter's `.grad` changes."""
    counts = lm.head_counts()
    with lm.differentiable():
        alphas = {k: torch.ones(1, *counts[k], requires_grad=True) for k in kinds}
        view = scaled_view(lm, alphas)
        lp = _log_probs(lm, lm.teacher_logits(view, src, tgt_in), targets)[0]
        grads = torch.autograd.grad(lp, [alphas[k] for k in kinds])
    return float(lp.detach()), {k: g[0].detach() for k, g in zip(kinds, grads)}
