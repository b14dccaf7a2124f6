"""A feature's page beside its examples: the tokens its direction promotes through the model's own output head, and
the heads whose queries or keys read its direction most (from the weights)."""
from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor, nn

from ..adapters import InspectableModel, norm_gain
from ..model import Head
from .dictionary import Dictionary
from .sites import Place


def _direction(adapter: InspectableModel, where: Place, dictionary: Dictionary, feature: int) -> Tensor:
    """The feature's decoder row in the residual stream's space (an attention output's through W_O)."""
    row = dictionary.w_dec[dictionary.check_feature(feature)]
    if where.kind is None:
        return row
    weight, _ = adapter.output_projection(where.kind, where.layer)
    return weight.detach().float() @ row


def promoted_tokens(adapter: InspectableModel, where: Place, dictionary: Dictionary, feature: int, n: int = 10
                    ) -> list[tuple[str, float]] | None:
    """The `n` tokens whose logits the feature's direction raises most through the output head (its final norm
    included, at b_dec for a residual site), with the rise; None for a site the output head does not read (an
    encoder's)."""
    if where.stack != adapter.family.output_stack or where.index is None and where.kind is None:
        return None
    direction = _direction(adapter, where, dictionary, feature)
    base = dictionary.b_dec if where.kind is None else torch.zeros_like(direction)
    with torch.no_grad():
        logits = adapter.output_head(torch.stack([base + direction, base]))
    rise = (logits[0] - logits[1]).float()
    values, ids = rise.topk(min(n, len(rise)))
    return [(adapter.id_to_token(int(i)), float(v)) for v, i in zip(values, ids, strict=True)]


def _through_norm(norm: nn.Module | None, direction: Tensor) -> Tensor:
    """A direction through a norm's gain (a LayerNorm's centring kept); the stream's own scale left out."""
    if norm is None:
        return direction
    if isinstance(norm, nn.LayerNorm):
        direction = direction - direction.mean()
    gain = norm_gain(norm)
    return direction if gain is None else direction * gain


def reading_heads(adapter: InspectableModel, where: Place, dictionary: Dictionary, feature: int) -> pd.DataFrame:
    """Every head that reads the feature's stream at or after its site, with |W_Q^h N d| and |W_K^h N d| for the
    feature's direction d through the head's norm gain (`head`, `query`, `key`), the strongest reader first."""
    direction = _direction(adapter, where, dictionary, feature)
    path = adapter.residual_path()
    rows = []
    first = where.layer + (1 if where.kind is not None else 0)
    for kind, projections in path.projections.items():
        for layer, proj in enumerate(projections):
            stack, s = path.sublayer(kind, layer)
            cross_keys = kind == "cross" and where.stack == "encoder" and (where.index is None or where.kind is None)
            if not cross_keys and (stack != where.stack or layer < first):
                continue
            norm = path.stacks[stack].layers[layer][s].norm if path.pre_norm else None
            read = _through_norm(norm, direction)
            if cross_keys:
                read = _through_norm(path.stacks["encoder"].final_norm, direction)
            q = proj.wq.detach().float() @ read
            k = proj.wk.detach().float() @ read
            heads, groups = adapter.head_counts()[kind][1], adapter.head_groups()[kind]
            dh = q.shape[0] // heads
            for h in range(heads):
                g = groups[h]
                rows.append({"head": Head(kind, layer, h).label,
                             "query": 0.0 if cross_keys else float(q[h * dh:(h + 1) * dh].norm()),
                             "key": float(k[g * dh:(g + 1) * dh].norm())})
    frame = pd.DataFrame(rows, columns=["head", "query", "key"])
    return frame.assign(most=frame[["query", "key"]].max(axis=1)).sort_values("most", ascending=False).drop(
        columns="most").reset_index(drop=True)
