"""Heads that build on heads: the Q-, K- and V-composition scores of Elhage et al. 2021 ("A Mathematical Framework for
Transformer Circuits") between every head and every later head that reads its output, every kind.

With TransformerLens's convention (row vectors; `HookedTransformer.all_composition_scores`): OV^1 = W_V^1 W_O^1 of the
writing head, QK^2 = W_Q^2 W_K^2ᵀ of the reading head, and

    Q: ‖OV^1 QK^2‖_F / (‖OV^1‖_F ‖QK^2‖_F)    K: the same with QK^2ᵀ    V: the same with OV^2

A head writes into its own stack; a later head of that stack reads it through its queries, keys and values; a
cross-attention head reads the decoder through its queries (Q only) and the encoder through its keys and values, so an
encoder head feeding a cross-attention head is K- and V-composition across the stack. The reading head's norm gains
(pre-norm models: its sublayer's norm; a cross-attention's keys: the encoder's final norm) are folded into its
W_Q / W_K / W_V, as TransformerLens's `fold_ln` folds them, and a norm on the writer's output (OLMo 2, Gemma) into
its W_O; centring, those norms' scales and the post-norm models' later norms are left out. The norms are computed
through small factors: ‖A B‖_F with B of rank Dh reduces to Dh x Dh products (QR).
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import Tensor, nn

from ...adapters import InspectableModel, ResidualPath, ResidualPathError, norm_gain
from ...model import Head

MODES = ("q", "k", "v")
_KEPT: "weakref.WeakKeyDictionary[nn.Module, tuple[tuple, pd.DataFrame]]" = weakref.WeakKeyDictionary()
_KEPT_GUARD = threading.Lock()


def weights_version(network: nn.Module) -> tuple:
    """What changes when any weight of `network` changes: each parameter's identity and in-place version counter
    (an optimizer step, a load_state_dict or a copy_ bumps it)."""
    return tuple((id(p), p._version) for p in network.parameters())


@dataclass(frozen=True)
class _Reader:
    """One attention layer's reading factors: per mode (H, Dh, D) with the norm gain folded in (None: not read)."""

    kind: str
    layer: int
    stack: str
    sub: int
    factors: dict[str, Tensor]
    norms: dict[str, Tensor]  # per mode (H,): ‖QK‖_F, ‖QKᵀ‖_F, ‖OV‖_F of each head


def _gain(norm: nn.Module | None, d: int) -> Tensor:
    gain = norm_gain(norm)
    return torch.ones(d) if gain is None else gain


def _head_gain(norm: nn.Module | None, n: int, dh: int) -> Tensor:
    """A query or key norm's gain as (n, Dh, 1): per head (Qwen3, Gemma 3) or over every head at once (OLMo 2)."""
    gain = _gain(norm, dh)
    return (gain.view(n, dh) if gain.numel() == n * dh else gain.expand(n, dh))[..., None]


def _heads(w: Tensor, n: int) -> Tensor:
    return w.detach().float().reshape(n, -1, w.shape[-1])  # (n, Dh, D)


def _r(x: Tensor) -> Tensor:
    """R of the QR of each x (n, D, Dh): ‖Y x‖_F = ‖Y Rᵀ‖... as ‖x M‖_F = ‖R M‖_F."""
    return torch.linalg.qr(x, mode="r")[1]  # (n, Dh, Dh)


def _writers(adapter: InspectableModel, path: ResidualPath, kind: str, layer: int, n_heads: int, groups: tuple[int, ...]
             ) -> tuple[Tensor, Tensor]:
    """Each head's OV factor V1 = W_O^h R(W_V^hᵀ)ᵀ (H, D, Dh), and ‖OV^h‖_F (H,)."""
    proj = path.projections[kind][layer]
    wv = _heads(proj.wv, max(groups) + 1)[list(groups)]  # (H, Dv, D)
    wo = adapter.output_projection(kind, layer)[0].detach().float()  # (D, H*Dv)
    stack, sub = path.sublayer(kind, layer)
    wo = wo * _gain(path.stacks[stack].layers[layer][sub].out_norm, wo.shape[0])[:, None]  # an output norm's gain
    wo = wo.reshape(wo.shape[0], n_heads, -1).permute(1, 0, 2)  # (H, D, Dv)
    factor = wo @ _r(wv.transpose(1, 2)).transpose(1, 2)
    return factor, factor.flatten(1).norm(dim=1)


def _reader(adapter: InspectableModel, path: ResidualPath, kind: str, layer: int, n_heads: int, groups: tuple[int, ...]
            ) -> _Reader:
    stack, sub = path.sublayer(kind, layer)
    proj = path.projections[kind][layer]
    d, dh = proj.wq.shape[1], proj.wq.shape[0] // n_heads
    own = path.stacks[stack].layers[layer][sub].norm if path.pre_norm else None
    key_norm = path.stacks["encoder"].final_norm if kind == "cross" else own
    n_kv = max(groups) + 1
    wq = _heads(proj.wq, n_heads) * _gain(own, d) * _head_gain(proj.q_norm, n_heads, dh)
    wk = (_heads(proj.wk, n_kv) * _head_gain(proj.k_norm, n_kv, dh))[list(groups)] * _gain(key_norm, d)
    wv = _heads(proj.wv, max(groups) + 1)[list(groups)] * _gain(key_norm, d)
    wo = adapter.output_projection(kind, layer)[0].detach().float()
    wo = wo * _gain(path.stacks[stack].layers[layer][sub].out_norm, d)[:, None]
    wo = wo.reshape(wo.shape[0], n_heads, -1).permute(1, 0, 2)  # (H, D, Dv)
    factors = {"q": _r(wk.transpose(1, 2)) @ wq, "k": _r(wq.transpose(1, 2)) @ wk, "v": _r(wo) @ wv}
    return _Reader(kind, layer, stack, sub, factors, {m: f.flatten(1).norm(dim=1) for m, f in factors.items()})


def _modes(path: ResidualPath, writer: tuple[str, int], reader: _Reader) -> tuple[str, ...]:
    """Which of the reader's inputs read the writer's stream (and come after it on the path)."""
    w_stack, w_sub = path.sublayer(*writer)
    if reader.kind == "cross":
        return ("k", "v") if w_stack == "encoder" else ("q",) if (writer[1], w_sub) < (reader.layer, reader.sub) else ()
    if w_stack != reader.stack or (writer[1], w_sub) >= (reader.layer, reader.sub):
        return ()
    return MODES


def composition_scores(adapter: InspectableModel) -> pd.DataFrame:
    """One row per (writing head, later reading head): `from`, `to` (`Head.label`) and `q`, `k`, `v` (NaN where the
    reader does not read the writer that way). ResidualPathError when no head reads another's output. Computed once
    per weights and kept (a copy is returned); weights changed in place are seen and scored again."""
    version = weights_version(adapter.network)
    with _KEPT_GUARD:
        kept = _KEPT.get(adapter.network)
    if kept is not None and kept[0] == version:
        return kept[1].copy()
    frame = _scores(adapter)
    with _KEPT_GUARD:
        _KEPT[adapter.network] = (version, frame)
    return frame.copy()


def _scores(adapter: InspectableModel) -> pd.DataFrame:
    path = adapter.residual_path()
    counts, groups = adapter.head_counts(), adapter.head_groups()
    layers = [(kind, layer) for kind, (n, _) in counts.items() for layer in range(n)]
    readers = [_reader(adapter, path, k, i, counts[k][1], groups[k]) for k, i in layers]
    blocks: list[pd.DataFrame] = []
    with torch.no_grad():
        for kind, layer in layers:
            factor, norm = _writers(adapter, path, kind, layer, counts[kind][1], groups[kind])
            h1, d, dh = factor.shape
            flat = factor.permute(1, 0, 2).reshape(d, h1 * dh)  # (D, H1*Dh): one matrix product per reader and mode
            writers = [Head(kind, layer, h).label for h in range(h1)]
            for reader in readers:
                modes = _modes(path, (kind, layer), reader)
                if not modes:
                    continue
                h2 = counts[reader.kind][1]
                block: dict[str, Any] = {"from": writers * h2, "to": [Head(reader.kind, reader.layer, h).label
                                                      for h in range(h2) for _ in range(h1)]}
                for mode in MODES:
                    if mode not in modes:
                        block[mode] = torch.full((h2 * h1,), float("nan")).numpy()
                        continue
                    u = reader.factors[mode]  # (H2, Dh, D)
                    both = (u.reshape(-1, d) @ flat).view(h2, u.shape[1], h1, dh).square().sum((1, 3)).sqrt()
                    block[mode] = (both / reader.norms[mode][:, None] / norm[None, :]).flatten().numpy()
                blocks.append(pd.DataFrame(block))
    if not blocks:
        raise ResidualPathError(f"{adapter.name} has one attention layer: no head reads another head's output, so "
                                "there is no composition to score")
    return pd.concat(blocks, ignore_index=True)[["from", "to", *MODES]]


def pair_composition(adapter: InspectableModel, writer: Head, reader: Head) -> dict[str, float]:
    """One (writer, later reader) pair's `q`, `k`, `v` scores as `composition_scores` gives them (NaN where the reader
    does not read the writer that way), from the two layers' factors only: one edge's number without the whole
    table. ResidualPathError when the reader does not read the writer at all."""
    path = adapter.residual_path()
    counts, groups = adapter.head_counts(), adapter.head_groups()
    with torch.no_grad():
        r = _reader(adapter, path, reader.kind, reader.layer, counts[reader.kind][1], groups[reader.kind])
        modes = _modes(path, (writer.kind, writer.layer), r)
        if not modes:
            raise ResidualPathError(f"{reader.label} does not read {writer.label}'s output: no composition")
        factor, norm = _writers(adapter, path, writer.kind, writer.layer, counts[writer.kind][1], groups[writer.kind])
        return {mode: float((r.factors[mode][reader.head] @ factor[writer.head]).norm() / r.norms[mode][reader.head]
                            / norm[writer.head]) if mode in modes else float("nan") for mode in MODES}


def strongest(frame: pd.DataFrame, mode: str, n: int = 10) -> pd.DataFrame:
    """The `n` pairs with the largest `mode` score."""
    return frame.dropna(subset=[mode]).nlargest(n, mode)[["from", "to", mode]].reset_index(drop=True)
