"""What a circuit explains: one clean/corrupted pair made ready (`Pair`) and the metric read on its target.

Typed pairs are read as `patch` reads them (`prepare_patching`): both inputs are fed the clean greedy output up to the
target step, by default the first step where the corrupted run would choose another token (`--step`, `--contrast` as
there). An encoder-only model's target is the clean input's first mask. Pairs from a task arrive as ids
(`pair_from_ids`). The metric (`METRICS`) is read on the logits at the target: the logit difference (default)
logit(clean answer) − logit(corrupted answer), each answer its own run's token (or the `--contrast`); the clean
answer's log-probability; or −KL(clean ‖ run), 0 on the clean run. Edges are patched position by position: typed
inputs of two lengths are aligned as `patch` aligns them (edit distance; an encoder-only model's too, its contrast read
at the corrupted input's own mask), the corrupted embeddings moved onto the clean positions (a clean position without
a partner keeps its own), and that aligned input is the corrupted run.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor

from ...adapters import InspectableModel, ResidualPathError, ban
from ...decode import InputError, read_source
from ..compare.token_alignment import align_tokens
from ..patching.runs import _token_id, prepare_patching
from .forward import Plan, graph_forward, make_plan

LOGIT_DIFF, LOGPROB, KL = "logit-diff", "logprob", "kl"
METRICS = (LOGIT_DIFF, LOGPROB, KL)


@dataclass(frozen=True)
class Pair:
    """A clean/corrupted pair made ready: each run's plan (capture, MLPs), the target and its answers."""

    clean: Plan
    corrupted: Plan
    answer: int  # the clean run's token at the target
    contrast: int  # the corrupted run's token there (or the --contrast)
    step: int | None  # 0-based output step (None: an encoder-only model's mask)
    clean_logits: Tensor  # (V,) at the target, banned ids at -inf
    aligned: dict[str, tuple[tuple[int, int], ...]] | None = None  # two lengths: per stack, (clean, corrupted) pairs

    @property
    def position(self) -> int:
        return self.clean.position

    def corrupted_embeddings(self) -> dict[str, Tensor]:
        """The corrupted run's embeddings on the clean positions: its own, or, for inputs of two lengths, moved there
        by the alignment (a clean position without a partner keeps its clean embedding)."""
        theirs = self.corrupted.embeddings()
        if self.aligned is None:
            return theirs
        out = self.clean.embeddings()
        for stack, pairs in self.aligned.items():
            moved = out[stack].clone()
            for a, b in pairs:
                moved[:, a] = theirs[stack][:, b]
            out[stack] = moved
        return out


def _banned(adapter: InspectableModel, logits: Tensor) -> Tensor:
    return ban(logits.float(), sorted(adapter.unemittable_ids))


def metric(name: str, pair: Pair, logits: Tensor) -> Tensor:
    """The metric (B,) of logits (B, V) at the pair's target."""
    if name == LOGIT_DIFF:
        return logits[:, pair.answer] - logits[:, pair.contrast]
    logp = _banned(pair.clean.adapter, logits).log_softmax(-1)
    if name == LOGPROB:
        return logp[:, pair.answer]
    clean = pair.clean_logits.log_softmax(-1)
    keep = torch.isfinite(clean)
    return -(clean[keep].exp() * (clean[keep] - logp[:, keep])).sum(-1)


def _same_length(clean: Tensor | None, corrupted: Tensor | None, what: str) -> None:
    if clean is not None and corrupted is not None and clean.shape[1] != corrupted.shape[1]:
        raise InputError(f"The clean and corrupted {what} have {clean.shape[1]} and {corrupted.shape[1]} tokens: "
                         "circuits patch edges position by position, so both need the same number of tokens.")


TOLERANCE = 1e-3  # the graph's recompute of the logits, relative to their largest


def _check_recompute(plan: Plan) -> None:
    """ResidualPathError unless the graph forward reproduces the model's own logits at the target (a family whose
    sublayers the graph does not read right is refused, never answered wrongly)."""
    want = plan.cap.insides.logits[0, plan.position].float()
    try:
        with torch.no_grad():
            got = graph_forward(plan).logits[0]
        error = float((got - want).abs().max() / want.abs().max().clamp(min=1e-6))
    except RuntimeError as e:
        raise ResidualPathError(f"{plan.adapter.name}: its sublayers are not read as the graph reads them ({e})"
                                ) from None
    if not error <= TOLERANCE:
        raise ResidualPathError(f"{plan.adapter.name}: the graph's recompute of the logits is off by {error:.1e} of "
                                "their scale, so its edges cannot be patched one by one")


def pair_from_ids(adapter: InspectableModel, src: tuple[Tensor, Tensor], tgt: tuple[Tensor, Tensor] | None,
                  position: int, *, contrast: int | None = None, step: int | None = None,
                  aligned: dict[str, tuple[tuple[int, int], ...]] | None = None, corrupted_position: int | None = None
                  ) -> Pair:
    """A pair from ids: sources (1, S) and decoder inputs (1, T) (None: encoder-only), the target `position` of the
    output stack (`corrupted_position` in the corrupted input, by default the same); the contrast is the corrupted
    run's own choice there unless given. Inputs of two lengths need `aligned` (per stack, (clean, corrupted) position
    pairs). InputError when both answers are one token."""
    if aligned is None:
        _same_length(*src, "inputs")
        if tgt is not None:
            _same_length(*tgt, "decoder inputs")
    with adapter.running():
        plans = [make_plan(adapter, s, None if tgt is None else t, at)
                 for s, t, at in zip(src, tgt if tgt is not None else (None, None),
                                     (position, position if corrupted_position is None else corrupted_position),
                                     strict=True)]
        plans[1] = dataclasses.replace(plans[1], graph=plans[0].graph)
    _check_recompute(plans[0])
    logits = [_banned(adapter, p.cap.insides.logits[0, p.position]) for p in plans]
    answer = int(logits[0].argmax())
    other = int(logits[1].argmax()) if contrast is None else contrast
    if other == answer:
        where = f"step {step + 1}" if step is not None else f"position {position + 1}"
        raise InputError(f"Both inputs give {adapter.id_to_token(answer)!r} at {where}: the metric would compare a "
                         "token with itself. Pick another --step, a --contrast, or an edit that changes the answer.")
    return Pair(plans[0], plans[1], answer, other, step, logits[0], aligned)


def _only_stack(adapter: InspectableModel) -> str:
    """The one stack of an encoder-only model (its residual path's)."""
    return next(iter(adapter.residual_path().stacks))


def pair_from_text(adapter: InspectableModel, clean: str, corrupted: str, *, step: int | None = None,
                   contrast: str | None = None) -> Pair:
    """A typed pair: decoders as `patch` chooses the step (0-based `step`; default the first the edit changes),
    an encoder-only model at the clean input's first mask. Bad input raises InputError in one line."""
    contrast_id = None if not contrast else _token_id(adapter, contrast)
    if adapter.family.decoder_kind is None:
        sources = read_source(adapter, clean), read_source(adapter, corrupted)
        mask = getattr(adapter, "mask_id", None)
        if mask not in sources[0].ids:
            raise InputError(f"{adapter.name} predicts at a mask: write {getattr(adapter, 'mask_token', '<mask>')} "
                             "in the clean input where the answer goes.")
        if sources[0].ids == sources[1].ids:
            raise InputError("The edited input reads the same as the clean one: change at least one word.")
        position = sources[0].ids.index(mask)
        src = torch.tensor([sources[0].ids]), torch.tensor([sources[1].ids])
        if len(sources[0].ids) == len(sources[1].ids):
            return pair_from_ids(adapter, src, None, position, contrast=contrast_id)
        partners = align_tokens(sources[0].ids, sources[1].ids).aligned
        partner = dict(partners).get(position)
        if partner is None:
            raise InputError("The edit removes the mask the clean input is read at: keep "
                             f"{getattr(adapter, 'mask_token', '<mask>')} in the edited input too.")
        return pair_from_ids(adapter, src, None, position, contrast=contrast_id,
                             aligned={_only_stack(adapter): partners}, corrupted_position=partner)
    setup = prepare_patching(adapter, clean, corrupted, step=step)
    if contrast_id is not None and contrast_id == setup.token:
        raise InputError(f"The contrast {contrast!r} is the clean output's own token at step {setup.step + 1}: pick "
                         "another token.")
    same = setup.src[0].shape == setup.src[1].shape and setup.tgt[0].shape == setup.tgt[1].shape
    aligned = None if same else {stack: a.aligned for stack, a in setup.alignment.items()}
    return pair_from_ids(adapter, setup.src, setup.tgt, setup.tgt[0].shape[1] - 1, contrast=contrast_id,
                         step=setup.step, aligned=aligned, corrupted_position=setup.tgt[1].shape[1] - 1)
