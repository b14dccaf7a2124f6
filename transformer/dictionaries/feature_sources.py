"""Which sources wrote a feature (direct feature attribution): for a dictionary on an attention output
(`attn:<kind>:L<l>`, the heads' outputs before W_O), a feature's pre-activation at a query position taken apart
over heads and source positions.

The site at query t is z_t = concat_h sum_s A[h, t, s] v[h, s], so the feature's pre-activation
(z_t - b_dec) . W_enc[:, f] + b_enc[f] is sum over (h, s) of A[h, t, s] (v[h, s] . W_enc[h's rows, f]) plus a
constant no source writes (b_enc[f] - b_dec . W_enc[:, f]). Where the feature is active its activation is that
pre-activation (ReLU, JumpReLU and top-k pass it as it is), so the row over the input says which source positions,
through which heads, made it fire (Kissane et al. 2024's attention-output SAEs).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..model import Insides
from .dictionary import Dictionary
from .sites import ATTN, DictionaryError, Place


@dataclass(frozen=True)
class FeatureSources:
    """`contributions` (H, Tk): head h and source s's share of feature `feature`'s pre-activation at `query`;
    `constant` the part no source writes; `pre_activation` their sum, `activation` the feature's value there."""

    feature: int
    query: int
    contributions: Tensor
    constant: float
    pre_activation: float
    activation: float

    def by_source(self) -> list[float]:
        """Each source position's share, summed over heads (the row shown over the input)."""
        return self.contributions.sum(0).tolist()

    def by_head(self) -> list[float]:
        """Each head's share, summed over sources."""
        return self.contributions.sum(1).tolist()


def feature_sources(insides: Insides, where: Place, dictionary: Dictionary, feature: int, query: int, row: int = 0
                    ) -> FeatureSources:
    """Feature `feature`'s pre-activation at 0-based `query` of batch row `row`, taken apart over heads and source
    positions; DictionaryError for a dictionary that is not on an attention output, or positions not there."""
    if where.site.what != ATTN or where.kind is None:
        raise DictionaryError(f"which sources wrote a feature is read on attention-output dictionaries "
                              f"(attn:<kind>:L<l>), not {where.site.label}")
    dictionary.check_feature(feature)
    inputs = insides.inputs[where.kind][where.layer].select(row)
    n_q = inputs.queries.shape[2]
    if not 0 <= query < n_q:
        raise DictionaryError(f"query position {query + 1} is outside the {n_q} positions of {where.site.label}")
    weights = inputs.pattern()[0, :, query].float()  # (H, Tk)
    values = inputs.head_values()[0].float()  # (H, Tk, Dv)
    heads = values.shape[0]
    w = dictionary.w_enc[:, feature].view(heads, -1)  # (H, Dv)
    contributions = weights * torch.einsum("hsv,hv->hs", values, w)  # (H, Tk)
    offset = dictionary.b_dec @ dictionary.w_enc[:, feature] if dictionary.apply_b_dec_to_input else 0.0
    constant = float(dictionary.b_enc[feature] - offset)
    merged: Tensor | None = inputs.merged
    z = merged[0, query].float() if merged is not None else inputs.head_outputs()[0, :, query].flatten()
    activation = float(dictionary.encode(z[None])[0, feature])
    return FeatureSources(feature, query, contributions, constant, float(contributions.sum()) + constant, activation)
