"""A patched decode: the corrupted input decoded greedily with one site copied from the clean run, to see what the
patch does to the whole output (what a click on a patching map opens).

A decode runs the encoder (or a decoder-only model's prompt) once over every position, then the decoder one position
a step; each patch is written on the call that holds its positions (`patching(..., decoding=True)`): an encoder site
before the first step, a decoder-side site (a decoder or cross head, the decoder's residual) at the step that feeds
its position, the target step's position for the heads. Before the target step the corrupted input is fed its own
outputs (in the patching runs, the clean output), so a decoder-side patch lands on the decode's own prefix; a decode
that ends before a patched position never reaches it and says so.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...adapters import InspectableModel
from ...adapters.patching import patch_points, patching
from ...decode import DecodeResult, InputError, greedy_decode
from .patching_sites import Site, sites_of
from .runs import PatchingSetup


def find_site(adapter: InspectableModel, setup: PatchingSetup, cell: Mapping[str, Any]) -> Site:
    """The site a map's cell names ({site, where, layer, head, position}); KeyError if the experiment has none."""
    for s in sites_of(adapter, setup, [cell["site"]]):
        if (s.where, s.layer, s.head, s.position) == (cell["where"], cell["layer"], cell["head"], cell["position"]):
            return s
    raise KeyError(f"no patch site {dict(cell)}")


def patched_decode(adapter: InspectableModel, setup: PatchingSetup, site: Site, *, top_k: int = 5) -> DecodeResult:
    """The corrupted input's greedy decode with `site` copied from the clean run; InputError when the decode ends
    before a position the site writes (it emitted its end token before the target step)."""
    counts = {k: h for k, (_, h) in adapter.head_counts().items()}
    with adapter.running(), patching(patch_points(adapter), site.patches, counts, decoding=True) as writes:
        result = greedy_decode(adapter, setup.corrupted_text, top_k=top_k)
    if writes.unwritten(site.patches):
        raise InputError(f"The corrupted input's decode ends after {len(result.steps)} tokens, before the target "
                         f"step {setup.step + 1} this site writes: the patch is never reached.")
    return result
