"""`decode --beam N` for every family: the beam tree (`decode.beam_tree`), its best hypothesis printed, the tree in
the trace JSON's "beam" entry (every node's prefix and score; the attention of the nodes on final hypotheses)."""
from __future__ import annotations

import argparse
from typing import Any

from ..adapters import InspectableModel
from ..decode import BeamTree, beam_tree


def beam_entry(adapter: InspectableModel, args: argparse.Namespace) -> tuple[BeamTree | None, dict[str, Any]]:
    """With --beam N > 1 (and no --reference): the tree and the trace JSON's {"beam": ...}; else (None, {})."""
    if args.beam <= 1 or args.reference is not None:
        return None, {}
    tree = beam_tree(adapter, args.text, args.beam, max_steps=args.max_steps, length_penalty_alpha=args.length_penalty)
    return tree, {"beam": tree.to_dict()}
