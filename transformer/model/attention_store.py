"""The attention store: what recomputes any attention weight exactly, kept in place of n x n maps.

Per kind and layer, a `LayerStore` holds the queries and keys as the scores read them (after RoPE; keys once per
key/value group), each row's log-sum-exp, each head's value norms through its share of the output projection, and
the terms between q . k and the weights as rules (`ScoreRules`), never as n x n tensors. The weight of query row i
and key j in head h is then `exp(s_hij - lse_hi)`, where

    s = scale * q_i . k_j  (+ T5's relative bias, + ALiBi)  -> cap * tanh(s / cap) if soft-capped  -> -inf if masked

and the mask is the causal rule, a sliding window and padding keys; attention sinks (one extra logit per head) enter
only the log-sum-exp. `tile(store, kind, layer, head, rows, keys)` recomputes any rows x keys block of one head.
The store stays where it was filled (the CPU); `device` names where a tile's arithmetic runs (a GPU): the rows and
keys a tile reads are copied there, and the tile comes back to the CPU.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import torch
from torch import Tensor

Index = slice | Sequence[int] | Tensor  # which rows or keys of a tile: a slice, positions, or a LongTensor
Device = torch.device | str | None  # where a tile is computed; None: where the store is
BLOCK = 1024  # rows and keys per block when a whole row's log-sum-exp is computed here


class StoreError(ValueError):
    """A model whose attention the store cannot reproduce; the message is one line for the user."""


@dataclass(frozen=True)
class RelativeBias:
    """T5's relative position bias as a rule: each (key - query) distance falls in a bucket, each bucket has one
    learned bias per head (Raffel et al. 2020, Mesh TensorFlow's bucketing)."""

    table: Tensor  # (buckets, H)
    bidirectional: bool
    max_distance: int

    def buckets(self, relative: Tensor) -> Tensor:
        """The bucket of each key - query distance (T5's `_relative_position_bucket`, the same operations)."""
        n, out = self.table.shape[0], torch.zeros_like(relative)
        if self.bidirectional:
            n //= 2
            out = out + (relative > 0).to(torch.long) * n
            relative = relative.abs()
        else:
            relative = -torch.min(relative, torch.zeros_like(relative))
        exact = n // 2
        large = exact + (torch.log(relative.float() / exact) / math.log(self.max_distance / exact)
                         * (n - exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, n - 1))
        return out + torch.where(relative < exact, relative, large)

    def bias(self, heads: Tensor, query_pos: Tensor, key_pos: Tensor) -> Tensor:
        """(heads, rows, keys) of bias (on the positions' device)."""
        table = self.table.float().to(query_pos.device)[:, heads]  # (buckets, h)
        return table[self.buckets(key_pos[None, :] - query_pos[:, None])].permute(2, 0, 1)


@dataclass(frozen=True)
class ScoreRules:
    """What lies between q . k and the weights, as rules. Positions: query row i sits at `offset + i` among the
    keys (a decode step's row: after the keys before it); key j at j."""

    scale: float
    causal: bool = False
    window: int | None = None  # a key is seen only if |query position - key position| < window
    offset: int = 0
    keep: Tensor | None = None  # (Tk,) bool: False at padding keys
    softcap: float | None = None  # s -> softcap * tanh(s / softcap) (Gemma 2)
    alibi: Tensor | None = None  # (H,) slopes: bias slope * (key position - query position)
    sinks: Tensor | None = None  # (H,) one extra logit per head, in the normaliser only (gpt-oss)
    relative: RelativeBias | None = None

    def describe(self) -> dict[str, Any]:
        """The rules as plain values (what the trace JSON states)."""
        return {"scale": self.scale, "causal": self.causal, "window": self.window, "offset": self.offset,
                "softcap": self.softcap, "padding": self.keep is not None, "alibi": self.alibi is not None,
                "sinks": self.sinks is not None, "relative_bias": self.relative is not None}

    def visible(self, query_pos: Tensor, key_pos: Tensor) -> Tensor | None:
        """(rows, keys) bool, True where a query may see a key; None when every key is seen."""
        seen = None
        if self.causal and key_pos.numel() and query_pos.numel() and int(key_pos.max()) > int(query_pos.min()):
            seen = key_pos[None, :] <= query_pos[:, None]  # (a block wholly below the diagonal needs no mask)
        if self.window is not None and key_pos.numel() and query_pos.numel() and (
                int(query_pos.max()) - int(key_pos.min()) >= self.window
                or int(key_pos.max()) - int(query_pos.min()) >= self.window):
            near = (query_pos[:, None] - key_pos[None, :]).abs() < self.window
            seen = near if seen is None else seen & near
        if self.keep is not None:
            real = self.keep[key_pos.cpu()].to(key_pos.device)[None, :].expand(len(query_pos), -1)
            seen = real if seen is None else seen & real
        return seen

    def block_unseen(self, first_row: int, last_row: int, first_key: int, last_key: int) -> bool:
        """True when no query of rows [first_row, last_row] sees any key of [first_key, last_key] (inclusive)."""
        q0, q1 = self.offset + first_row, self.offset + last_row
        if self.causal and first_key > q1:
            return True
        if self.window is not None and (q0 - last_key >= self.window or first_key - q1 >= self.window):
            return True
        return False

    def scores(self, dots: Tensor, heads: Tensor, rows: Tensor, keys: Tensor) -> Tensor:
        """The softmax's input from q . k, (heads, rows, keys), on the device of `dots`, `heads`, `rows` and
        `keys`; masked entries -inf."""
        s = dots * self.scale
        query_pos = rows + self.offset
        if self.relative is not None:
            s = s + self.relative.bias(heads, query_pos, keys)
        if self.alibi is not None:
            s = s + self.alibi.float().to(s.device)[heads][:, None, None] * (keys[None, :] - query_pos[:, None]).float()
        if self.softcap is not None:
            s = torch.tanh(s / self.softcap) * self.softcap
        seen = self.visible(query_pos, keys)
        return s if seen is None else s.masked_fill(~seen, float("-inf"))


def _take(t: Tensor, index: Tensor) -> Tensor:
    """`t`'s positions `index` along dim 1: a view where they are one run (a block, a whole row's keys), else a
    gathered copy."""
    n = index.numel()
    if n and int(index[-1]) - int(index[0]) == n - 1 and (n == 1 or bool((index.diff() == 1).all())):
        return t.narrow(1, int(index[0]), n)
    return t.index_select(1, index)


def positions(index: Index, n: int) -> Tensor:
    """A tile's rows or keys as a LongTensor of positions in [0, n)."""
    if isinstance(index, slice):
        return torch.arange(n)[index]
    out = torch.as_tensor(index, dtype=torch.long).reshape(-1)
    if out.numel() and (int(out.min()) < 0 or int(out.max()) >= n):
        raise IndexError(f"positions outside 0-{n - 1}")
    return out


@dataclass(frozen=True)
class LayerStore:
    """One attention layer of one sequence: queries (H, Tq, Dh), keys (Hkv, Tk, Dh), each row's log-sum-exp
    (H, Tq), the rules, the key/value head of each query head, and each head's value norms (H, Tk) through its
    share of the output projection, ||W_O^h v_j|| (a key's contribution to a row is its weight times this)."""

    queries: Tensor
    keys: Tensor
    lse: Tensor
    rules: ScoreRules
    groups: tuple[int, ...]
    value_norms: Tensor | None = None

    @property
    def n_heads(self) -> int:
        return self.queries.shape[0]

    @property
    def n_rows(self) -> int:
        return self.queries.shape[1]

    @property
    def n_keys(self) -> int:
        return self.keys.shape[1]

    def scores(self, heads: Tensor, rows: Tensor, keys: Tensor, device: Device = None) -> Tensor:
        """(heads, rows, keys) of the softmax's input, computed on `device` (None: the store's); `heads`, `rows`
        and `keys` index the store where it is."""
        heads, rows, keys = heads.cpu(), rows.cpu(), keys.cpu()
        q = _take(self.queries, rows).index_select(0, heads)  # rows first: a block, not the input
        kv = torch.tensor(self.groups)[heads]
        used = kv.unique()  # each key/value head read once, not copied for every query head that reads it
        k = _take(self.keys, keys).index_select(0, used)
        to = q.device if device is None else torch.device(device)
        q, k = q.to(to, torch.float32), k.to(to, torch.float32)
        if len(used) == 1:
            dots = q @ k[0].transpose(-2, -1)
        else:
            slot = torch.searchsorted(used, kv)
            dots = q.new_empty(q.shape[0], q.shape[1], k.shape[1])
            for i in range(len(used)):
                sel = (slot == i).nonzero().view(-1).to(to)
                dots.index_copy_(0, sel, q.index_select(0, sel) @ k[i].transpose(-2, -1))
        return self.rules.scores(dots, heads.to(to), rows.to(to), keys.to(to))

    def lse_rows(self, heads: Tensor, rows: Tensor, device: Device = None) -> Tensor:
        """(heads, rows, 1) of log-sum-exps, on `device` (None: the store's)."""
        lse = self.lse.index_select(1, rows.cpu()).index_select(0, heads.cpu())[..., None]
        return lse.to(lse.device if device is None else torch.device(device), torch.float32)

    def weights(self, heads: Tensor, rows: Tensor, keys: Tensor, device: Device = None) -> Tensor:
        """(heads, rows, keys) of weights, exp(s - lse), computed on `device`; a row that sees nothing is 0."""
        s = self.scores(heads, rows, keys, device)
        return torch.exp(s - self.lse_rows(heads, rows, device)).nan_to_num_(0.0)

    def nbytes(self) -> int:
        tensors = [self.queries, self.keys, self.lse, self.value_norms, self.rules.keep, self.rules.alibi,
                   self.rules.sinks, None if self.rules.relative is None else self.rules.relative.table]
        return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def row_lse(queries: Tensor, keys: Tensor, rules: ScoreRules, groups: Sequence[int], block: int = BLOCK) -> Tensor:
    """Each row's log-sum-exp (H, Tq) over every key (and the sink), computed in blocks of rows x keys."""
    layer = LayerStore(queries, keys, torch.zeros(0), rules, tuple(groups))
    heads, tq, tk = torch.arange(queries.shape[0]), queries.shape[1], keys.shape[1]
    out = torch.full((len(heads), tq), float("-inf"))
    for r0 in range(0, tq, block):
        rows = torch.arange(r0, min(r0 + block, tq))
        for k0 in range(0, tk, block):
            if rules.block_unseen(r0, int(rows[-1]), k0, min(k0 + block, tk) - 1):
                continue
            s = layer.scores(heads, rows, torch.arange(k0, min(k0 + block, tk)))
            out[:, rows] = torch.logaddexp(out[:, rows], s.logsumexp(-1))
    if rules.sinks is not None:
        out = torch.logaddexp(out, rules.sinks.float()[:, None].expand_as(out))
    return out


def layer_store(queries: Tensor, keys: Tensor, rules: ScoreRules, groups: Sequence[int],
                value_norms: Tensor | None = None, lse: Tensor | None = None) -> LayerStore:
    """A layer's store (queries (H, Tq, Dh), keys (Hkv, Tk, Dh)); its log-sum-exp computed here unless given
    (the fused kernel's)."""
    queries, keys = queries.detach().float().contiguous(), keys.detach().float().contiguous()
    if lse is None:
        lse = row_lse(queries, keys, rules, groups)
    return LayerStore(queries, keys, lse.detach().float(), rules, tuple(int(g) for g in groups),
                      None if value_norms is None else value_norms.detach().float())


def value_norms(values: Tensor, groups: Sequence[int], weight: Tensor) -> Tensor:
    """||W_O^h v_j|| per head and key, (H, Tk): values (Hkv, Tk, Dv), `weight` the output projection (D, H * Dv)."""
    dv = values.shape[-1]
    return torch.stack([(values[g].float() @ weight[:, h * dv:(h + 1) * dv].float().t()).norm(dim=-1)
                        for h, g in enumerate(groups)])


@dataclass(frozen=True)
class AttentionStore:
    """Per kind, one `LayerStore` per layer: every weight of one sequence, recomputed on demand by `tile`."""

    layers: dict[str, tuple[LayerStore, ...]] = field(default_factory=dict)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.layers)

    def layer(self, kind: str, layer: int) -> LayerStore:
        if kind not in self.layers:
            raise KeyError(f"unknown attention kind {kind!r}; the store has {self.kinds}")
        if not 0 <= layer < len(self.layers[kind]):
            raise IndexError(f"{kind} has {len(self.layers[kind])} layer(s); layer {layer} does not exist")
        return self.layers[kind][layer]

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        """(layers, heads, queries, keys) of the kind's maps, were they materialised."""
        first = self.layer(kind, 0)
        return len(self.layers[kind]), first.n_heads, first.n_rows, first.n_keys

    def tile(self, kind: str, layer: int, head: int | None, rows: Index = slice(None), keys: Index = slice(None),
             device: Device = None) -> Tensor:
        """(rows, keys) of one head's weights; head None: the mean of heads; computed on `device`."""
        return tile(self, kind, layer, head, rows, keys, device)

    def dense(self, kind: str) -> Tensor:
        """Every weight of a kind, (layers, heads, queries, keys): for short inputs only."""
        out = []
        for one in self.layers[kind]:
            heads = torch.arange(one.n_heads)
            out.append(one.weights(heads, torch.arange(one.n_rows), torch.arange(one.n_keys)))
        return torch.stack(out)

    def nbytes(self) -> int:
        """Memory the store holds."""
        return sum(one.nbytes() for layers in self.layers.values() for one in layers)

    def dense_nbytes(self) -> int:
        """Memory the same weights take as float32 maps."""
        return sum(math.prod(self.shape(kind)) * 4 for kind in self.kinds)

    def with_rules(self, kind: str, layer: int, **changes: Any) -> "AttentionStore":
        """The store with one layer's rules changed (tests, and a window shown shorter than the model's)."""
        layers = list(self.layers[kind])
        layers[layer] = replace(layers[layer], rules=replace(layers[layer].rules, **changes))
        return AttentionStore({**self.layers, kind: tuple(layers)})


def tile(store: AttentionStore, kind: str, layer: int, head: int | None, rows: Index = slice(None),
         keys: Index = slice(None), device: Device = None) -> Tensor:
    """One head's weights for `rows` x `keys`, recomputed exactly from the store, (rows, keys); head None gives the
    mean of heads. `device` (a GPU, or "cpu"; None: the store's) is where it is computed; the tile comes back to
    the store's device."""
    one = store.layer(kind, layer)
    if head is not None and not 0 <= head < one.n_heads:
        raise IndexError(f"{kind} has {one.n_heads} head(s); head {head} does not exist")
    heads = torch.arange(one.n_heads) if head is None else torch.tensor([head])
    w = one.weights(heads, positions(rows, one.n_rows), positions(keys, one.n_keys), device)
    return w.mean(0).to(one.queries.device)
