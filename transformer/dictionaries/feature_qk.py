"""A score taken apart into dictionary features (feature-level QK attribution).

On each side of a cell (head, query, key), the residual stream the head reads, x, is the dictionary's active
features plus two terms: x = sum_i a_i d_i + error + b_dec, with a = encode(x), d_i the decoder's rows and error =
x - decode(a) (so the sum is x exactly). These parts go through what lies between the stream and W_Q / W_K as the
residual parts do (`analysis.reading_parts` with `start`: the norms frozen at this input, the sublayers between the
layer's entry and a cross-attention carried as parts, RoPE, log-n scaling), so the score is a sum over pairs. Pairs
of two features are `pairs`; everything else is a named term (`features×error`, `error×features`, `error×error`,
`bias×...`, a sublayer's part, and the model's additive terms such as the mask), and sum(pairs) + sum(terms) is the
score the model computed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ..adapters import ResidualPathError
from ..analysis import BIAS, Parts, PathCapture, QKTable, frozen_norm, qk_attribution, reading_parts
from ..model import Head
from .dictionary import Dictionary
from .sites import RESID, DictionaryError, Site

FEATURES, ERROR = "features", "error"
_FEATURE = "#"  # a feature's part is named "#12" (0-based id)


def _side_site(cap: PathCapture, kind: str, layer: int, keys: bool) -> Site:
    """The residual site one side of attention `kind`'s 0-based `layer` reads."""
    if kind == "cross" and keys:
        return Site(RESID, "enc", None)
    stack, _ = cap.path.sublayer(kind, layer)
    code = ("enc" if stack == "encoder" else "dec") if len(cap.path.stacks) > 1 else None
    return Site(RESID, code, layer + 1)


def needed_sites(cap: PathCapture, head: Head) -> tuple[Site, Site]:
    """The sites the query side and the key side of `head` read (one site twice for a self-attention)."""
    return _side_site(cap, head.kind, head.layer, False), _side_site(cap, head.kind, head.layer, True)


def _pick(dictionaries: Sequence[Dictionary], site: Site, side: str, head: Head) -> Dictionary:
    for dictionary in dictionaries:
        if dictionary.site == site:
            return dictionary
    have = ", ".join(d.site.label for d in dictionaries) or "none"
    raise DictionaryError(f"the {side} side of {head.label} reads {site.label}: give a dictionary of that site "
                          f"(given: {have})")


def _side(cap: PathCapture, head: Head, at: int, keys: bool, dictionary: Dictionary) -> tuple[Parts, dict[int, float]]:
    kind, layer, _ = head
    if kind == "cross" and keys:  # the encoder's output through its final norm, as the keys read it
        x = cap.insides.residual["encoder"][-1][0, at].float()
        normed, shift = frozen_norm(cap.path.stacks["encoder"].final_norm, x[None, None], x[None])
        x = normed[0, 0] + (0 if shift is None else shift[0])
    else:
        stack, _ = cap.path.sublayer(kind, layer)
        x = cap.insides.residual[stack][layer][0, at].float()
    dictionary.check_width(int(x.shape[-1]), cap.model)
    acts = dictionary.encode(x[None])[0]
    active = acts.nonzero().flatten().tolist()
    error = x - dictionary.decode(acts[None])[0]
    vectors = [acts[i] * dictionary.w_dec[i] for i in active] + [error, dictionary.b_dec]
    start = Parts((*(f"{_FEATURE}{i}" for i in active), ERROR, BIAS), torch.stack(vectors)[:, None], (at,))
    parts = reading_parts(cap, kind, layer, [at], keys=keys, start=start)
    return parts, {i: float(acts[i]) for i in active}


def _feature(name: str) -> int | None:
    return int(name[1:]) if name.startswith(_FEATURE) else None


@dataclass(frozen=True)
class FeatureQKTable:
    """One score over feature pairs: `table` (the pairs of parts, features named `#i`), each side's active features
    and activations, and the dictionaries' sites."""

    table: QKTable
    query_features: dict[int, float]
    key_features: dict[int, float]
    query_site: Site
    key_site: Site

    @property
    def score(self) -> float:
        return self.table.score

    def pairs(self) -> list[tuple[int, int, float]]:
        """(query feature, key feature, contribution), largest magnitude first."""
        out = []
        for q, k, c in self.table.pairs():
            qf, kf = _feature(q), _feature(k)
            if qf is not None and kf is not None:
                out.append((qf, kf, c))
        return out

    def terms(self) -> dict[str, float]:
        """Everything but feature pairs, summed by name (`error×features`, `bias×bias`, `mask`...)."""
        terms: dict[str, float] = {}
        contributions = self.table.contributions
        for i, q in enumerate(self.table.query_parts):
            for j, k in enumerate(self.table.key_parts):
                qg, kg = (FEATURES if _feature(n) is not None else n for n in (q, k))
                if qg == kg == FEATURES:
                    continue
                name = f"{qg}×{kg}"
                terms[name] = terms.get(name, 0.0) + float(contributions[i, j])
        return {**terms, **self.table.terms}

    @property
    def total(self) -> float:
        """Σ pairs + Σ terms (the score, to the float's rounding)."""
        return sum(c for _, _, c in self.pairs()) + sum(self.terms().values())

    def error_share(self) -> float:
        """|Σ the terms with an error side| / |score|: how much of the score the dictionaries do not explain."""
        error = sum(v for n, v in self.terms().items() if ERROR in n.split("×"))
        return abs(error) / max(abs(self.score), 1e-12)

    def as_dict(self) -> dict:
        """{"score", "pairs": [{"query_feature", "key_feature", "contribution"}], "terms": {name: value}, ...}."""
        table = self.table.as_dict()
        table.pop("pairs")
        return {**table, "pairs": [{"query_feature": q, "key_feature": k, "contribution": c}
                                   for q, k, c in self.pairs()], "terms": self.terms(),
                "query_site": self.query_site.label, "key_site": self.key_site.label,
                "query_features": {str(i): a for i, a in self.query_features.items()},
                "key_features": {str(i): a for i, a in self.key_features.items()}, "error_share": self.error_share()}


def _check_cell(cap: PathCapture, head: Head, query: int, key: int) -> None:
    """ResidualPathError in one line for a head or a position the capture has not got."""
    inputs = cap.insides.inputs.get(head.kind)
    if inputs is None or not 0 <= head.layer < len(inputs) or not 0 <= head.head < inputs[0].n_heads:
        qk_attribution(cap, head, query, key)  # its own line names what is there
        return
    for name, at, n in (("query", query, inputs[head.layer].queries.shape[2]),
                        ("key", key, inputs[head.layer].keys.shape[2])):
        if not 0 <= at < n:
            raise ResidualPathError(f"{name} position {at + 1} is outside {head.label}'s {n} {name} positions")


def feature_qk(cap: PathCapture, head: Head, query: int, key: int, dictionaries: Sequence[Dictionary]
               ) -> FeatureQKTable:
    """The score of `head` at (query, key) (0-based) over the features of the dictionaries of the sites its query
    and its key read; DictionaryError in one line where one is missing or does not fit."""
    _check_cell(cap, head, query, key)
    q_site, k_site = needed_sites(cap, head)
    q_dict, k_dict = _pick(dictionaries, q_site, "query", head), _pick(dictionaries, k_site, "key", head)
    q_parts, q_acts = _side(cap, head, query, False, q_dict)
    k_parts, k_acts = _side(cap, head, key, True, k_dict)
    table = qk_attribution(cap, head, query, key, parts=(q_parts, k_parts))
    return FeatureQKTable(table, q_acts, k_acts, q_site, k_site)
