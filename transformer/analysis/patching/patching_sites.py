"""The patch sites of one experiment and their recoveries as one tidy frame (what the CLI prints and the app draws).

Sites (`SITES`):
- "encoder output": an encoder-decoder's encoder output at each source position (the last encoder layer's residual;
  the encoder's final norm works position by position), one run per aligned position;
- "head": each head's output before the output projection: decoder-side heads (decoder self, cross; a decoder-only
  model's self) at the target position, encoder heads at every aligned source position together; grouped-query
  models per query head; "head per position" (on request): each encoder head at each aligned source position;
- "residual": the residual stream after each layer (0: the embeddings) at each aligned position, per stack.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ...adapters import InspectableModel
from ...adapters.patching import HEAD, RESIDUAL, Patch
from .head_sweep import DEFAULT_BATCH, Progress
from .runs import PatchingSetup, patched_metrics

ENCODER_OUTPUT, HEADS, RESIDUAL_STREAM = "encoder output", "head", "residual"
HEAD_POSITIONS = "head per position"  # encoder heads one source position at a time (on request: layers x heads x S)
SITES = (ENCODER_OUTPUT, HEADS, RESIDUAL_STREAM)
COLUMNS = ["site", "where", "layer", "head", "position", "token", "metric", "difference", "recovery"]
ALL_POSITIONS = -1  # `position` of a site patched at every aligned position at once (encoder heads)


@dataclass(frozen=True)
class Site:
    """One patched run: what it writes (`patches`) and how the frame names it."""

    site: str
    where: str  # stack or attention kind
    layer: int  # residual: i (0 the embeddings); head: its layer; encoder output: the encoder's last
    head: int  # -1 for none
    position: int  # clean position, or ALL_POSITIONS
    token: str
    patches: tuple[Patch, ...]


def _residual(setup: PatchingSetup, stack: str, i: int, pairs: Sequence[tuple[int, int]]) -> Patch:
    clean = setup.clean.residual[stack][i][0]  # (T, D)
    return Patch(RESIDUAL, stack, i, tuple(b for _, b in pairs), clean[[a for a, _ in pairs]])


def _head(setup: PatchingSetup, kind: str, layer: int, head: int, n_heads: int,
          pairs: Sequence[tuple[int, int]]) -> Patch:
    clean = setup.clean.heads[kind][layer][0]  # (T, H * Dh)
    width = clean.shape[-1] // n_heads
    value = clean[[a for a, _ in pairs], head * width:(head + 1) * width]
    return Patch(HEAD, kind, layer, tuple(b for _, b in pairs), value, head=head)


def residual_site(setup: PatchingSetup, stack: str, i: int, positions: Sequence[int] | None = None,
                  site: str = "residual") -> Site:
    """The residual of `stack` after layer i at the given clean positions (None: every aligned one) as one run."""
    wanted = None if positions is None else set(positions)
    pairs = [p for p in setup.alignment[stack].aligned if wanted is None or p[0] in wanted]
    return _residual_site(setup, stack, i, pairs, site)


def _residual_site(setup: PatchingSetup, stack: str, i: int, pairs: Sequence[tuple[int, int]],
                   site: str = "residual") -> Site:
    """`residual_site` for aligned (clean, corrupted) position pairs already picked."""
    label = setup.tokens[stack][0][pairs[0][0]] if len(pairs) == 1 else "(all)"
    return Site(site, stack, i, -1, pairs[0][0] if len(pairs) == 1 else ALL_POSITIONS, label,
                (_residual(setup, stack, i, pairs),))


def sites_of(adapter: InspectableModel, setup: PatchingSetup, which: Sequence[str] = SITES) -> list[Site]:
    """Every run of the chosen sites, in frame order."""
    out: list[Site] = []
    family, counts = adapter.family, adapter.head_counts()
    if ENCODER_OUTPUT in which and family.has_cross:
        last = len(setup.clean.residual["encoder"]) - 1
        out += [_residual_site(setup, "encoder", last, [pair], ENCODER_OUTPUT)
                for pair in setup.alignment["encoder"].aligned]
    if HEADS in which:
        for kind in family.kinds:
            n_layers, n_heads = counts[kind]
            if kind == family.encoder_kind:
                pairs, position, token = list(setup.alignment["encoder"].aligned), ALL_POSITIONS, "(all)"
            else:
                last = setup.tgt[0].shape[1] - 1
                pairs, position, token = [(last, setup.tgt[1].shape[1] - 1)], last, setup.tokens["decoder"][0][last]
            out += [Site(HEADS, kind, layer, head, position, token,
                         (_head(setup, kind, layer, head, n_heads, pairs),))
                    for layer in range(n_layers) for head in range(n_heads)]
    if HEAD_POSITIONS in which and family.encoder_kind is not None and family.has_cross:
        kind = family.encoder_kind
        n_layers, n_heads = counts[kind]
        aligned = setup.alignment["encoder"].aligned
        out += [Site(HEAD_POSITIONS, kind, layer, head, a, setup.tokens["encoder"][0][a],
                     (_head(setup, kind, layer, head, n_heads, [(a, b)]),))
                for layer in range(n_layers) for head in range(n_heads) for a, b in aligned]
    if RESIDUAL_STREAM in which:
        for stack, residual in setup.clean.residual.items():  # one position a run: its pair, not a search for it
            aligned = setup.alignment[stack].aligned
            out += [_residual_site(setup, stack, i, [pair]) for i in range(len(residual)) for pair in aligned]
    return out


@dataclass(frozen=True)
class PatchingResult:
    """Each site's metric, difference from the corrupted run and recovery (NaN when the edit barely moves the
    target), with the experiment's summary."""

    frame: pd.DataFrame  # COLUMNS, one row per site
    setup: PatchingSetup
    seconds: float

    def summary(self) -> dict:
        """What the CLI's --json and the app's caption report besides the frame."""
        s = self.setup
        return {"metric": s.metric_name, "step": s.step + 1, "token": s.token, "clean_metric": s.clean_metric,
                "corrupted_metric": s.corrupted_metric,
                "barely_moves": s.barely, "unaligned": {k: {"clean": list(a), "corrupted": list(b)}
                                                        for k, (a, b) in s.unaligned().items()}}


def site_frame(setup: PatchingSetup, sites: Sequence[Site], metrics: Sequence[float]) -> pd.DataFrame:
    """The tidy frame of sites and their measured metrics."""
    rows = [{"site": s.site, "where": s.where, "layer": s.layer, "head": s.head, "position": s.position,
             "token": s.token, "metric": m, "difference": m - setup.corrupted_metric, "recovery": setup.recovery(m)}
            for s, m in zip(sites, metrics, strict=True)]
    return pd.DataFrame(rows, columns=COLUMNS)


def patch_sites(adapter: InspectableModel, setup: PatchingSetup, which: Sequence[str] = SITES, *,
                batch: int = DEFAULT_BATCH, progress: Progress | None = None) -> PatchingResult:
    """Patch every site of `which`, one batched run per site; `progress` (may raise `Cancelled`) after each batch."""
    start = time.perf_counter()
    sites = sites_of(adapter, setup, which)
    metrics = patched_metrics(adapter, setup, [s.patches for s in sites], batch=batch, progress=progress)
    return PatchingResult(site_frame(setup, sites, metrics), setup, time.perf_counter() - start)
