"""The heads of a known circuit, named from the detectors: the previous-token head and the induction head of a model's
causal self-attention (Olsson et al. 2022), labelled as `Head.label` writes them ("self:L1H2")."""
from __future__ import annotations

from ...adapters import InspectableModel
from ...model import Head
from ..heads.detectors import Detection, detect_heads

PREVIOUS_TOKEN, INDUCTION = "previous-token", "induction"


def circuit_heads(found: Detection) -> dict[str, str]:
    """{label: role} for the head with the highest previous-token score and the one with the highest induction score
    (the mean-of-heads rows left out); one head that tops both is named for its induction score."""
    heads = found.frame[found.frame["head"] >= 0]
    named: dict[str, str] = {}
    for column, role in (("previous_token", PREVIOUS_TOKEN), ("induction", INDUCTION)):
        row = heads.loc[heads[column].idxmax()]
        named[Head(found.kind, int(row["layer"]), int(row["head"])).label] = role
    return named


def known_circuit(adapter: InspectableModel) -> dict[str, str]:
    """`circuit_heads` of `adapter`'s detectors (previous-token and induction scores on repeated random tokens)."""
    return circuit_heads(detect_heads(adapter))
