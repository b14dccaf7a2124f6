"""Which sources wrote a feature at long inputs: the same direct feature attribution as `feature_sources`, with the
query's attention row recomputed from the attention store (no n x n map) and the values made from the residual
stream entering the layer (T x D, kept by the caller: `Insides.residual`, or any capture of that stream).

For head h (reading key/value group g) at query t, the feature's pre-activation is
sum_s A[h, t, s] (v[g, s] . W_enc[h's rows, f]) + (b_enc[f] - b_dec . W_enc[:, f]), with v = W_V norm(x) + b_V for a
pre-norm layer (the layer's own norm, applied as the model applies it) and v = W_V x + b_V for a post-norm one.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ..adapters import InspectableModel
from ..model import AttentionStore
from .dictionary import Dictionary
from .feature_sources import FeatureSources
from .sites import ATTN, DictionaryError, Place


def _values(adapter: InspectableModel, where: Place, stream: Tensor) -> Tensor:
    """(Hkv, T, Dv): the layer's values at every position of `stream` (T, D)."""
    assert where.kind is not None
    path = adapter.residual_path()
    stack, s = path.sublayer(where.kind, where.layer)
    if where.kind == "cross" or s != 0:
        raise DictionaryError(f"which sources wrote a feature through the store reads a layer's first attention "
                              f"(self-attention), not {where.site.label}")
    proj = path.projections[where.kind][where.layer]
    norm = path.stacks[stack].layers[where.layer][s].norm if path.pre_norm else None
    with torch.no_grad():
        x = stream.to(proj.wv.dtype)
        read = norm(x) if norm is not None else x
        values = read @ proj.wv.detach().T + (0 if proj.bv is None else proj.bv.detach())
    groups = adapter.head_groups()[where.kind]
    n_kv = max(groups) + 1
    return values.float().view(len(stream), n_kv, -1).transpose(0, 1)


def store_feature_sources(adapter: InspectableModel, store: AttentionStore, stream: Tensor, where: Place,
                          dictionary: Dictionary, feature: int, query: int) -> FeatureSources:
    """Feature `feature`'s pre-activation at 0-based `query` taken apart over heads and sources, the weights read
    from `store`'s row and the values from `stream` (T, D), the residual stream entering the layer; DictionaryError
    in one line for another site or a position not there."""
    if where.site.what != ATTN or where.kind is None:
        raise DictionaryError(f"which sources wrote a feature is read on attention-output dictionaries "
                              f"(attn:<kind>:L<l>), not {where.site.label}")
    dictionary.check_feature(feature)
    values = _values(adapter, where, stream)[torch.tensor(adapter.head_groups()[where.kind])]  # (H, Tk, Dv)
    one = store.layer(where.kind, where.layer)
    if not 0 <= query < one.n_rows:
        raise DictionaryError(f"query position {query + 1} is outside the {one.n_rows} positions of "
                              f"{where.site.label}")
    if len(stream) != one.n_keys:
        raise DictionaryError(f"the stream has {len(stream)} positions, the store's {where.site.label} {one.n_keys}")
    heads = torch.arange(one.n_heads)
    weights = one.weights(heads, torch.tensor([query]), torch.arange(one.n_keys))[:, 0].float()  # (H, Tk)
    w = dictionary.w_enc[:, feature].view(one.n_heads, -1)  # (H, Dv)
    contributions = weights * torch.einsum("hsv,hv->hs", values, w)
    offset = dictionary.b_dec @ dictionary.w_enc[:, feature] if dictionary.apply_b_dec_to_input else 0.0
    constant = float(dictionary.b_enc[feature] - offset)
    z = torch.einsum("hs,hsv->hv", weights, values).flatten()
    activation = float(dictionary.encode(z[None])[0, feature])
    return FeatureSources(feature, query, contributions, constant, float(contributions.sum()) + constant, activation)
