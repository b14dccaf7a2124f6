"""The trace JSON's "internals" (one head's whole computation) and "contributions" (every head's ||α·W_O v|| map)
entries (docs/formats.md), from a decode's capture. Floats are plain lists; -inf (a key a query may not see) is
written as null, so the file is strict JSON."""
from __future__ import annotations

import math
from typing import Any

from torch import Tensor

from ...adapters import InspectableModel
from .head_capture import CapturedDecode, trace_view
from .head_computation import check_selection, contribution_maps, head_slice, mean_contribution_map


def _plain(t: Tensor, digits: int = 6) -> Any:
    """A tensor as nested lists of rounded floats, -inf/NaN as None."""
    def fix(x: Any) -> Any:
        if isinstance(x, list):
            return [fix(v) for v in x]
        return round(x, digits) if math.isfinite(x) else None
    return fix(t.detach().float().tolist())


def internals_dict(adapter: InspectableModel, captured: CapturedDecode, kind: str, layer: int, head: int
                   ) -> dict[str, Any]:
    """One head's computation for every query: what its softmax saw and what it gave (HeadSelectionError for a head
    the model has not got). Rows and keys are the capture's: the trace's row r is row r + `first_row`."""
    inputs = check_selection(captured.insides, kind, layer, head).select(0)
    kv = inputs.groups[head]
    weight, bias = adapter.output_projection(kind, layer)
    w_o = head_slice(weight.detach().float(), head, inputs.n_heads)  # (D, Dv)
    scores = inputs.scores()[0, head]  # (Tq, Tk)
    weights = scores.softmax(-1)
    values = inputs.values[0, kv].float()  # (Tk, Dv)
    z = weights @ values  # (Tq, Dv)
    q_tokens, k_tokens = captured.tokens(kind)
    entry: dict[str, Any] = {
        "kind": kind, "layer": layer, "head": head, "kv_head": kv, "n_kv_heads": int(inputs.keys.shape[1]),
        "first_row": captured.first if captured.axes[kind][0] != "source" else 0,
        "query_tokens": list(q_tokens), "key_tokens": list(k_tokens), "scale": inputs.scale,
        "queries": _plain(inputs.queries[0, head]), "keys": _plain(inputs.keys[0, kv]), "values": _plain(values),
        "terms": {name: _plain(term.float().expand(scores.shape) if term.dim() < 4 else
                               term[0, head if term.shape[1] > 1 else 0].float().expand(scores.shape))
                  for name, term in inputs.terms.items()},
        "dots": _plain(inputs.dot_products()[0, head]), "scores": _plain(scores), "weights": _plain(weights),
        "head_output": _plain(z), "share": _plain(z @ w_o.T), "value_norms": _plain((values @ w_o.T).norm(dim=-1)),
    }
    if inputs.unrotated is not None:
        entry["queries_unrotated"] = _plain(inputs.unrotated[0][0, head])
        entry["keys_unrotated"] = _plain(inputs.unrotated[1][0, kv])
    return entry


def contributions_dict(adapter: InspectableModel, captured: CapturedDecode) -> dict[str, Any]:
    """Per kind, every layer's and head's contribution map over the trace's rows and keys ([layer][head][q][k], as
    the trace's attention), and the mean of heads (the norm of the mean vector, [layer][q][k])."""
    heads, means = {}, {}
    for kind, layers in captured.insides.inputs.items():
        per_layer, mean_layer = [], []
        for layer, inputs in enumerate(layers):
            weight, _ = adapter.output_projection(kind, layer)
            maps = contribution_maps(inputs, weight)[0]  # (H, Tq, Tk)
            per_layer.append([_plain(trace_view(captured, kind, m)) for m in maps])
            mean_layer.append(_plain(trace_view(captured, kind, mean_contribution_map(inputs, weight)[0])))
        heads[kind], means[kind] = per_layer, mean_layer
    return {"formula": "||alpha_ij W_O^h (W_V x_j + b_V)|| (Kobayashi et al. 2020)", "heads": heads, "mean": means}
