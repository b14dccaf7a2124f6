"""An attention store as flat named tensors and plain metadata (what a safetensors side file holds), and back."""
from __future__ import annotations

from typing import Any

from torch import Tensor

from .attention_store import AttentionStore, LayerStore, RelativeBias, ScoreRules, StoreError

_OPTIONAL = ("value_norms", "keep", "alibi", "sinks", "relative")


def store_tensors(store: AttentionStore) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """(name -> tensor, metadata): `{kind}.{layer}.queries` etc.; the metadata holds each layer's rules and groups."""
    tensors: dict[str, Tensor] = {}
    meta: dict[str, Any] = {"kinds": {}}
    for kind, layers in store.layers.items():
        meta["kinds"][kind] = []
        for i, one in enumerate(layers):
            r = one.rules
            found = {"queries": one.queries, "keys": one.keys, "lse": one.lse, "value_norms": one.value_norms,
                     "keep": r.keep, "alibi": r.alibi, "sinks": r.sinks,
                     "relative": None if r.relative is None else r.relative.table}
            tensors.update({f"{kind}.{i}.{name}": t.contiguous() for name, t in found.items() if t is not None})
            meta["kinds"][kind].append({
                "scale": r.scale, "causal": r.causal, "window": r.window, "offset": r.offset, "softcap": r.softcap,
                "groups": list(one.groups),
                "relative": None if r.relative is None else {"bidirectional": r.relative.bidirectional,
                                                             "max_distance": r.relative.max_distance}})
    return tensors, meta


def store_from_tensors(tensors: dict[str, Tensor], meta: dict[str, Any]) -> AttentionStore:
    """The store `store_tensors` wrote; StoreError for a file that does not hold one."""
    try:
        layers = {}
        for kind, entries in meta["kinds"].items():
            out = []
            for i, e in enumerate(entries):
                got = {name: tensors.get(f"{kind}.{i}.{name}") for name in _OPTIONAL}
                if e["relative"] is not None and got["relative"] is None:
                    raise StoreError(f"{kind} layer {i}: a relative bias without its table")
                relative = None if e["relative"] is None or got["relative"] is None else RelativeBias(
                    got["relative"], bool(e["relative"]["bidirectional"]), int(e["relative"]["max_distance"]))
                rules = ScoreRules(float(e["scale"]), bool(e["causal"]), e["window"], int(e["offset"]), got["keep"],
                                   e["softcap"], got["alibi"], got["sinks"], relative)
                out.append(LayerStore(tensors[f"{kind}.{i}.queries"], tensors[f"{kind}.{i}.keys"],
                                      tensors[f"{kind}.{i}.lse"], rules, tuple(int(g) for g in e["groups"]),
                                      got["value_norms"]))
            layers[kind] = tuple(out)
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"not an attention store ({type(exc).__name__}: {str(exc)[:120]})") from None
    return AttentionStore(layers)
