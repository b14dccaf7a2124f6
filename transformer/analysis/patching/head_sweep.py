"""Every head's effect at scale: exact ablations run many at a time, and a one-pass first-order estimate.

Both work on a *view* of the model (`substituted`): each attention's output projection is swapped for a
`ScaledProjection` that multiplies its input, the concatenated head outputs, by a per-example scale before the
projection's own weights — the same rule as the head mask, one mask per row of the batch. Nothing is put on the
shared model. Heads of the decoder (self and cross) leave the encoder untouched, so its output is computed once and
reused for all of them; the layers before an ablated head are not run again either: on the view they `Replay` the
output recorded on the intact run (ours, BART, Marian; not T5, whose blocks hand a position bias along).
`dtype=torch.bfloat16` runs the ablations under CPU autocast (see `BF16_TOLERANCE`).

The estimate is attribution patching (Nanda 2023; Syed et al. 2023): with a scale alpha = 1 on every head,
d log p(output) / d alpha_h is gradient x activation at the head's output, and the drop when the head is switched
off (alpha_h = 0) is, to first order, that derivative. One forward and one backward give every head's estimate.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any, Callable, Sequence

import torch
from torch import Tensor, nn

from ...adapters import InspectableModel, ban
from ..attribution.attribution import substituted

Progress = Callable[[float], None]  # fraction done, 0..1; may raise `Cancelled` to stop the work
BF16_TOLERANCE = 0.05  # bf16 drops stay within 0.05 nats per output token + 5% of the fp32 drop (see `bf16_bound`)
DEFAULT_BATCH = 16  # ablations per forward pass


def bf16_bound(drop: float, n_tokens: int) -> float:
    """How far a bf16 drop may be from the fp32 one: `BF16_TOLERANCE` nats per output token + that share of |drop|
    (bf16 keeps ~3 significant digits of each logit, so the error grows with the output and the effect)."""
    return BF16_TOLERANCE * (n_tokens + abs(drop))


class Cancelled(Exception):
    """Raised by a progress callback (the app's Cancel button) to stop a sweep or an estimate."""


class ScaledProjection(nn.Module):
    """An output projection whose input (B, T, heads * head_dim) is first multiplied by `scale` (B or 1, 1, same)."""

    def __init__(self, projection: nn.Module, scale: Tensor) -> None:
        super().__init__()
        self.projection, self.scale = projection, scale

    def forward(self, x: Tensor, *args: object, **kwargs: object) -> Tensor:
        return self.projection(x * self.scale.to(x.dtype), *args, **kwargs)


def projection_paths(adapter: InspectableModel) -> dict[str, list[str]]:
    """Dotted paths in `adapter.network` of every attention's output projection, per kind and layer."""
    network: Any = adapter.network  # ours or a Hugging Face network, told apart by its attributes
    names = {id(m): n for n, m in network.named_modules()}
    if adapter.family.cross_kind is None:  # one stack (decoder-only, encoder-only): where the adapter says
        return {k: [names[id(m)] for m in mods] for k, mods in adapter.output_projections().items()}
    if hasattr(network, "get_encoder"):  # Hugging Face encoder-decoders
        from ...adapters.hf_seq2seq import attention_outputs
        return {k: [names[id(m)] for m in mods] for k, mods in attention_outputs(network).items()}
    return {"encoder_self": [f"encoder.{i}.self_attn.out_proj" for i in range(len(network.encoder))],
            "decoder_self": [f"decoder.{i}.self_attn.out_proj" for i in range(len(network.decoder))],
            "cross": [f"decoder.{i}.cross_attn.out_proj" for i in range(len(network.decoder))]}


def layer_paths(adapter: InspectableModel) -> dict[str, list[str]] | None:
    """Dotted paths of the encoder's and the decoder's layers, or None where a layer's output is not all the next
    layer reads (T5's blocks hand a position bias along), so layers cannot be replayed."""
    network: Any = adapter.network  # ours or a Hugging Face network, told apart by its attributes
    if not hasattr(network, "get_encoder"):
        return {side: [f"{side}.{i}" for i in range(len(getattr(network, side)))] for side in ("encoder", "decoder")}
    stacks = {"encoder": network.get_encoder(), "decoder": network.get_decoder()}
    if not all(isinstance(getattr(stack, "layers", None), nn.ModuleList) for stack in stacks.values()):
        return None
    names = {id(m): n for n, m in network.named_modules()}
    return {side: [names[id(layer)] for layer in stack.layers] for side, stack in stacks.items()}


class _LayerStandIn(nn.Module):
    """Base of the layer stand-ins on a view: keeps the layer's cross-attention reachable (our decoder asks each
    layer for its cross-attention keys and values before calling it)."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        if hasattr(layer, "cross_attn"):
            self.cross_attn = layer.cross_attn


class Recorder(_LayerStandIn):
    """Runs the layer and keeps its output in `store[key]`."""

    def __init__(self, layer: nn.Module, store: dict[str, object], key: str) -> None:
        super().__init__(layer)
        self.layer, self.store, self.key = layer, store, key

    def forward(self, *args: object, **kwargs: object) -> object:
        out = self.layer(*args, **kwargs)
        self.store[self.key] = out
        return out


def _expand(output: object, n: int) -> object:
    """A recorded layer output (a hidden state (1, T, D), or a tuple starting with one) for a batch of n."""
    if isinstance(output, Tensor):
        return output.expand(n, *output.shape[1:])
    if isinstance(output, tuple) and output and isinstance(output[0], Tensor):
        return (_expand(output[0], n), *output[1:])
    raise TypeError(f"cannot replay a layer output of type {type(output).__name__}")


class Replay(_LayerStandIn):
    """Stands in for a layer whose input does not change: returns the output recorded on the intact run."""

    def __init__(self, layer: nn.Module, output: object, n: int) -> None:
        super().__init__(layer)
        self.output = _expand(output, n)

    def forward(self, *args: object, **kwargs: object) -> object:
        return self.output


def scaled_view(adapter: InspectableModel, scales: dict[str, Tensor], replay: dict[str, object] | None = None
                ) -> nn.Module:
    """A view of the network whose heads of each kind are scaled by scales[kind] (N, layers, heads), and whose
    layers named in `replay` (path -> recorded output) return that output without running."""
    paths = projection_paths(adapter)
    n = next(iter(scales.values())).shape[0]
    replacements: dict[str, nn.Module] = {path: Replay(adapter.network.get_submodule(path), out, n)
                                          for path, out in (replay or {}).items()}
    for kind, scale in scales.items():
        for layer, path in enumerate(paths[kind]):
            proj: Any = adapter.network.get_submodule(path)  # an nn.Linear (or GPT-2's Conv1D: weight (in, out))
            per_head = scale[:, layer]  # (N, H)
            width = proj.in_features if hasattr(proj, "in_features") else proj.weight.shape[0]
            wide = per_head.repeat_interleave(width // per_head.shape[1], dim=1)  # (N, H * Dh)
            replacements[path] = ScaledProjection(proj, wide[:, None, :])
    return substituted(adapter.network, replacements)


def _log_probs(adapter: InspectableModel, logits: Tensor, targets: Tensor) -> Tensor:
    """(N, positions, V) logits -> (N,) sum of log p(targets) over the output steps, as decoding scores them: the
    last rows, one per target (a decoder-only model's logits cover its prompt too)."""
    rows = ban(logits[:, logits.shape[1] - targets.shape[-1]:].float(), sorted(adapter.unemittable_ids))
    return rows.log_softmax(-1).gather(-1, targets.expand(rows.shape[0], -1)[..., None])[..., 0].sum(-1)


class _Encoded:
    """The encoder's output for one source, reused by every decoder-side ablation (ours and Hugging Face's)."""

    def __init__(self, adapter: InspectableModel, src: Tensor) -> None:
        net: Any = adapter.network  # ours or a Hugging Face network, told apart by its attributes
        self.adapter, self.src = adapter, src
        if hasattr(net, "get_encoder"):
            self.mask = torch.ones_like(src)
            self.state = net.get_encoder()(input_ids=src, attention_mask=self.mask, return_dict=True)[0]
        else:
            self.state, self.mask = net.encode(src)

    def logits(self, view: Any, tgt: Tensor) -> Tensor:
        n = tgt.shape[0]
        memory = self.state.expand(n, *self.state.shape[1:])
        if hasattr(view, "get_encoder"):
            return view(encoder_outputs=(memory,), attention_mask=self.mask.expand(n, -1), decoder_input_ids=tgt,
                        use_cache=False, return_dict=True).logits
        return view.decode(tgt, memory, self.mask)


def masked_log_probs(adapter: InspectableModel, src: Tensor, tgt_in: Tensor, targets: Tensor,
                     masks: dict[str, Tensor], encoded: _Encoded | None = None,
                     replay: dict[str, object] | None = None) -> Tensor:
    """log p(targets) (N,) for N head masks at once (kind -> (N, layers, heads)); with `encoded`, only decoder
    kinds may be masked and the encoder's output is reused; layers in `replay` return their recorded output
    (only layers before every masked head may be replayed). Call inside `adapter.running()`."""
    n = next(iter(masks.values())).shape[0]
    view = scaled_view(adapter, masks, replay)
    if encoded is not None:
        if "encoder_self" in masks:
            raise ValueError("encoder heads change the encoder's output: it cannot be reused")
        return _log_probs(adapter, encoded.logits(view, tgt_in.expand(n, -1)), targets)
    return _log_probs(adapter, adapter.teacher_logits(view, src.expand(n, -1), tgt_in.expand(n, -1)), targets)


def sweep_log_probs(adapter: InspectableModel, src: Tensor, tgt_in: Tensor, targets: Tensor,
                    heads: Sequence[tuple[str, int, int]], *, batch: int = DEFAULT_BATCH,
                    dtype: torch.dtype | None = None, progress: Progress | None = None,
                    time_cap: float | None = None) -> tuple[float, dict[int, float]]:
    """(intact log p, {index in `heads`: log p with that head off}), `batch` ablations per pass, decoder heads
    first; heads are missing when `time_cap` seconds passed (checked between passes). `progress` gets the
    fraction done after each pass."""
    counts = adapter.head_counts()
    start = time.perf_counter()
    autocast = torch.autocast("cpu", dtype=dtype) if dtype is not None else nullcontext()
    results: dict[int, float] = {}
    layers = layer_paths(adapter)
    recorded: dict[str, object] = {}
    with adapter.running(), autocast:
        recording = adapter.network if layers is None else substituted(adapter.network, {
            path: Recorder(adapter.network.get_submodule(path), recorded, path) for side in layers.values()
            for path in side})
        base = float(_log_probs(adapter, adapter.teacher_logits(recording, src, tgt_in), targets)[0])
        encoded = _Encoded(adapter, src)
        # decoder heads first (the encoder's output is reused), layer by layer (the layers before are replayed)
        order = sorted(range(len(heads)), key=lambda i: (heads[i][0] == "encoder_self", heads[i][1], heads[i][0],
                                                         heads[i][2]))
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
                replay = None
                if layers is not None:
                    lowest = min(heads[i][1] for i in members)
                    side = layers["encoder" if on_encoder else "decoder"]
                    replay = {path: recorded[path] for path in side[:lowest]}
                lp = masked_log_probs(adapter, src, tgt_in, targets, masks, None if on_encoder else encoded, replay)
                results.update(zip(members, lp.float().tolist(), strict=True))
            if progress is not None:
                progress(min(1.0, (first + len(chunk)) / len(order)))
    return base, results


def head_gradients(adapter: InspectableModel, src: Tensor, tgt_in: Tensor, targets: Tensor,
                   kinds: Sequence[str] | None = None) -> tuple[float, dict[str, Tensor]]:
    """(log p(targets), kind -> (layers, heads) d log p / d head scale at 1): one forward and one backward.

    Only the head scales get gradients (`torch.autograd.grad`), so no parameter's `.grad` changes."""
    counts = adapter.head_counts()
    kinds = tuple(adapter.family.kinds if kinds is None else kinds)
    with adapter.differentiable():
        alphas = {k: torch.ones(1, *counts[k], requires_grad=True) for k in kinds}
        view = scaled_view(adapter, alphas)
        lp = _log_probs(adapter, adapter.teacher_logits(view, src, tgt_in), targets)[0]
        grads = torch.autograd.grad(lp, [alphas[k] for k in kinds])
    return float(lp.detach()), {k: g[0].detach() for k, g in zip(kinds, grads, strict=True)}
