"""Beam search over the model's public `encode` / `decode` methods (width, GNMT length penalty).

Greedy decoding stays what the app steps through; beam search gives final hypotheses only (no trace).
A hypothesis is never extended with the pad or start token. Width 1 picks the most probable token at
every step, which is greedy decoding.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Iterator, Sequence

import torch
from torch import Tensor

from ..data import END_ID, START_ID, Tokenizer, source_ids
from ..model import Seq2SeqTransformer, eval_mode
from .greedy import InputError, encode_source

MAX_BEAM = 64


@dataclass(frozen=True)
class Hypothesis:
    """One finished (or cut-off) beam hypothesis: output ids without specials, text, scores."""

    token_ids: tuple[int, ...]
    text: str
    log_prob: float  # sum of the token log-probabilities (</s> included when finished)
    score: float  # log_prob divided by the length penalty; hypotheses are ranked by it
    finished: bool  # ended with </s> within the step limit


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha; alpha 0 ranks by total log-probability."""
    return ((5 + length) / 6) ** alpha


def _check(width: int, alpha: float) -> None:
    """Raise InputError for a beam width or length penalty that cannot be used."""
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_BEAM:
        raise InputError(f"The beam width must be an integer between 1 and {MAX_BEAM}, got {width!r}.")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 5.0:
        raise InputError(f"The length penalty must be a number between 0 and 5, got {alpha!r}.")


@dataclass(frozen=True)
class Candidate:
    """A continuation one GNMT step considered: the live row it extends, the token, the summed log-probability, and
    its fate: "finished" (ended among the best `width`), "ended" (ended, not among them), "kept" (continued),
    "pruned"."""

    row: int
    token: int
    log_prob: float
    fate: str


def gnmt_step(alive: Sequence[float], logp: Tensor, width: int, eos: Collection[int], n_finished: int
              ) -> Iterator[Candidate]:
    """The one GNMT beam step (our models' rule, shared by `beam_search_ids` and the beam tree): the best 2 x `width`
    continuations of the live prefixes (summed log-probabilities `alive`, next-token log-probabilities `logp`
    (n, V)), best first, until `width` are kept and `width` have finished (`n_finished` already); an ending counts
    only among the best `width` candidates (width 1: greedy)."""
    total = (torch.tensor(list(alive))[:, None] + logp).flatten()
    top, index = total.topk(min(2 * width, total.numel()))
    vocab, kept, finished = logp.size(1), 0, n_finished
    for rank, (value, flat) in enumerate(zip(top.tolist(), index.tolist(), strict=True)):
        if value == float("-inf"):
            return
        row, token = divmod(flat, vocab)
        if token in eos:
            fate = "ended" if rank >= width else "finished"
            finished += fate == "finished"
        else:
            fate = "kept" if kept < width else "pruned"
            kept += fate == "kept"
        yield Candidate(row, token, value, fate)
        if kept == width and finished >= width:
            return


def beam_search_ids(model: Seq2SeqTransformer, src_ids: Sequence[int], width: int = 4, alpha: float = 0.6,
                    max_steps: int | None = None) -> list[tuple[list[int], float, float, bool]]:
    """Hypotheses (ids, log_prob, score, finished) for source ids (with </s>), best first, at most `width`."""
    _check(width, alpha)
    limit = model.cfg.max_len - 1
    steps = min(max_steps or 2 * len(src_ids) + 10, limit)
    with eval_mode(model):
        memory, mask = model.encode(torch.tensor([list(src_ids)]))
        alive: list[tuple[list[int], float]] = [([START_ID], 0.0)]
        finished: list[tuple[list[int], float, float, bool]] = []
        for _ in range(steps):
            n = len(alive)
            tgt = torch.tensor([ids for ids, _ in alive])
            logits = model.decode(tgt, memory.expand(n, -1, -1), None if mask is None else mask.expand(n, -1, -1, -1))
            logp = logits[:, -1].float().log_softmax(-1)  # (n, V)
            logp[:, model.cfg.pad_id] = float("-inf")
            logp[:, START_ID] = float("-inf")
            next_alive: list[tuple[list[int], float]] = []
            for c in gnmt_step([s for _, s in alive], logp, width, (END_ID,), len(finished)):
                ids = alive[c.row][0]
                if c.fate == "finished":
                    length = len(ids)  # output tokens plus </s>
                    finished.append((ids[1:], c.log_prob, c.log_prob / length_penalty(length, alpha), True))
                elif c.fate == "kept":
                    next_alive.append(([*ids, c.token], c.log_prob))
            alive = next_alive
            if not alive or gnmt_done(finished, alive, width, alpha, steps):
                break
        finished += [(ids[1:], s, s / length_penalty(len(ids) - 1, alpha), False) for ids, s in alive]
    finished.sort(key=lambda h: (not h[3], -h[2]))
    return finished[:width]


def gnmt_done(finished: list, alive: list[tuple[list[int], float]], width: int, alpha: float, steps: int) -> bool:
    """True when `width` hypotheses have finished and no live one can still beat the worst of the best."""
    if len(finished) < width:
        return False
    kept = sorted(h[2] for h in finished)[-width]
    best_alive = max(s for _, s in alive)
    return best_alive / length_penalty(steps + 1, alpha) <= kept if alpha > 0 else best_alive <= kept


def beam_search(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, text: str,
                width: int = 4, alpha: float = 0.6, max_steps: int | None = None) -> list[Hypothesis]:
    """Beam search for `text`: up to `width` hypotheses, best first; raises InputError for bad input."""
    src, _ = encode_source(model, src_tokenizer, text)
    return [Hypothesis(tuple(ids), tgt_tokenizer.decode(ids), lp, score, done)
            for ids, lp, score, done in beam_search_ids(model, src, width, alpha, max_steps)]


def beam_texts(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
               texts: Sequence[str], width: int = 4, alpha: float = 0.6) -> list[str]:
    """The best beam hypothesis for each text (sources longer than the model allows are cut)."""
    limit = model.cfg.max_len - 1
    outputs = []
    for text in texts:
        src = source_ids(src_tokenizer.encode(text)[:limit])
        best = beam_search_ids(model, src, width, alpha)
        outputs.append(tgt_tokenizer.decode(best[0][0]) if best else "")
    return outputs

