"""A patched decode: the corrupted input decoded greedily with one site copied from the clean run, to see what the
patch does to the whole output (what a click on a patching map opens).

A decode runs the encoder (or a decoder-only model's prompt) once over every position, then one position a step; so a
site can be replayed when every position it writes is in that first pass: the encoder's sites, or a decoder-only
model's prompt positions. Decoder-side sites of an encoder-decoder live at the target step only and are not replayed.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..adapters import InspectableModel
from ..adapters.patching import patch_points, patching
from ..decode import DecodeResult, InputError, greedy_decode
from .patching import PatchingSetup
from .patching_sites import Site, sites_of


def find_site(lm: InspectableModel, setup: PatchingSetup, cell: Mapping[str, Any]) -> Site:
    """The site a map's cell names ({site, where, layer, head, position}); KeyError if the experiment has none."""
    for s in sites_of(lm, setup, [cell["site"]]):
        if (s.where, s.layer, s.head, s.position) == (cell["where"], cell["layer"], cell["head"], cell["position"]):
            return s
    raise KeyError(f"no patch site {dict(cell)}")


def replayable(lm: InspectableModel, setup: PatchingSetup, site: Site) -> bool:
    """Whether every position `site` writes is in a decode's first pass (the encoder, or the prompt)."""
    if lm.family.has_cross:
        return all(p.where in ("encoder", lm.family.encoder_kind) for p in site.patches)
    prompt = setup.tgt[1].shape[1] - setup.step  # the corrupted prompt (and a start token) before the output
    return all(max(p.positions) < prompt for p in site.patches)


def patched_decode(lm: InspectableModel, setup: PatchingSetup, site: Site, *, top_k: int = 5) -> DecodeResult:
    """The corrupted input's greedy decode with `site` copied from the clean run; InputError for a site a decode
    cannot replay (see `replayable`)."""
    if not replayable(lm, setup, site):
        raise InputError("This patch writes a decoder position of the target step: a decode runs the decoder one "
                         "step at a time, so only the encoder's sites (a decoder-only model's prompt) are replayed.")
    counts = {k: h for k, (_, h) in lm.head_counts().items()}
    with lm.running(), patching(patch_points(lm), site.patches, counts, first_call_only=True):
        return greedy_decode(lm, setup.corrupted_text, top_k=top_k)
