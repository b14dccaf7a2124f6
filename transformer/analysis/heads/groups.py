"""Grouped-query attention made visible: which key/value group each query head reads, and maps averaged within
a group (heads of one group share keys and values, so their maps are often alike)."""
from __future__ import annotations

import torch
from torch import Tensor

from ...decode import AttentionTrace, head_label


def group_of(trace: AttentionTrace, kind: str, head: int) -> int:
    """The key/value group (0-based) of a query head."""
    return trace.head_groups[trace.family.check(kind)][head]


def n_groups(trace: AttentionTrace, kind: str) -> int:
    """How many key/value groups a kind's heads fall in (= heads when there is no grouping)."""
    return len(set(trace.head_groups[kind]))


def grouped(trace: AttentionTrace, kind: str) -> bool:
    """True when several query heads share a key/value group (grouped-query or multi-query attention)."""
    return n_groups(trace, kind) < trace.weights(kind).shape[1]


def group_head_label(trace: AttentionTrace, kind: str, head: int, *, spelled: bool = False) -> str:
    """'H3 · kv2' (1-based; spelled: 'Head 3 · kv2') for a head of a grouped model, 'H3' otherwise."""
    name = head_label(head, spelled=spelled)
    return f"{name} · kv{group_of(trace, kind, head) + 1}" if grouped(trace, kind) else name


def group_mean(trace: AttentionTrace, kind: str) -> Tensor:
    """(layers, groups, queries, keys): the mean map of the query heads of each key/value group."""
    w = trace.weights(kind)
    groups = torch.tensor(trace.head_groups[kind])
    return torch.stack([w[:, groups == g].mean(1) for g in range(int(groups.max()) + 1)], dim=1)
