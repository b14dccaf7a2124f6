"""Beam search for every family, kept as a tree: every candidate each step considered (kept, finished or pruned),
its log-probability, and the attention row that chose it (every kind, layer and head), so a view can draw the tree,
grey the pruned branches and show any hypothesis's attention at any step.

Two rules, as the issue asks: Hugging Face models search as `generate(num_beams=W)` does in transformers 5 (its
vectorised `_beam_search`: log-softmax, the generation config's processors on the log-probabilities, the top
max(2, 1 + #eos) x W continuations, finished hypotheses only from the best W, score = sum of log-probabilities /
generated length ** length_penalty, its early-stopping heuristic; the generation config's `length_penalty` and
`early_stopping`), so the final hypotheses equal generate's (tests/library/decode/test_beam_tree.py, per family). Our
own models search by GNMT's rule (length penalty ((5 + n) / 6) ** alpha, `gnmt_step`), which `beam.beam_search` and
`eval --beam` read off this same search.

The model is called as a greedy decode calls it (`loop.MapsFeed`, one token of every live hypothesis a step, batched,
with the encoder output and decoder cache reordered by the hypotheses' parents, as `generate` does) and the search
is as long as a greedy decode may be (`loop.step_limit`); the step's weights give every hypothesis's attention row.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Iterator, Sequence

import torch
from torch import Tensor

from ..adapters import InspectableModel, SourceText
from ..model import StepOutput
from .greedy import InputError, read_source
from .loop import MapsFeed, step_limit

NEG = -1.0e9
MAX_BEAM = 64


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha; alpha 0 ranks by total log-probability."""
    return ((5 + length) / 6) ** alpha


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
    """The one GNMT beam step: the best 2 x `width` continuations of the live prefixes (summed log-probabilities
    `alive`, next-token log-probabilities `logp` (n, V)), best first, until `width` are kept and `width` have
    finished (`n_finished` already); an ending counts only among the best `width` candidates (width 1: greedy)."""
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


def gnmt_done(scores: Sequence[float], alive: Sequence[float], width: int, alpha: float, steps: int) -> bool:
    """True when `width` hypotheses have finished (their `scores`) and no live one (summed log-probabilities
    `alive`) can still beat the worst of the best."""
    if len(scores) < width:
        return False
    kept = sorted(scores)[-width]
    best_alive = max(alive)
    return best_alive / length_penalty(steps + 1, alpha) <= kept if alpha > 0 else best_alive <= kept


@dataclass(frozen=True, eq=False)
class BeamNode:
    """One prefix in the tree: the root (the decoder's prefix, `step` -1) or a candidate continuation."""

    id: int
    parent: int | None
    step: int  # 0-based output step whose token this node adds
    token_id: int
    token: str
    log_prob: float  # the prefix's summed log-probability
    status: str  # "root", "kept" (continued), "finished" (a final hypothesis), "ended" (ended, not among the best),
    # "pruned" (considered, not continued)
    score: float | None = None  # finished: the length-penalised score hypotheses are ranked by
    attention: dict[str, Tensor] | None = field(default=None, repr=False)  # kind -> (layers, heads, keys): the row
    # of the step that chose this token (shared by siblings)

    def to_dict(self, with_attention: bool = False) -> dict:
        out: dict[str, object] = {"id": self.id, "parent": self.parent, "step": self.step, "token": self.token,
                                  "token_id": self.token_id, "log_prob": self.log_prob, "status": self.status,
                                  "score": self.score}
        if with_attention and self.attention is not None:
            out["attention"] = {k: [[[round(float(x), 6) for x in row] for row in layer] for layer in v.tolist()]
                                for k, v in self.attention.items()}
        return out


@dataclass(frozen=True)
class BeamHypothesis:
    """A final hypothesis: its last node, output ids (the end token included when it ended), text and scores."""

    node: int
    token_ids: tuple[int, ...]
    text: str
    log_prob: float
    score: float
    finished: bool


@dataclass(frozen=True, eq=False)
class BeamTree:
    """The whole search: nodes (index = id), the final hypotheses best first, and how it was run."""

    source_tokens: tuple[str, ...]
    prefix_tokens: tuple[str, ...]
    nodes: tuple[BeamNode, ...]
    hypotheses: tuple[BeamHypothesis, ...]
    width: int
    rule: str  # "generate" (Hugging Face) or "gnmt" (ours)
    length_penalty: float

    def path(self, node: int) -> list[BeamNode]:
        """The nodes from the root's first child down to `node`."""
        out = []
        while node is not None and (parent := self.nodes[node].parent) is not None:
            out.append(self.nodes[node])
            node = parent
        return out[::-1]

    def to_dict(self) -> dict:
        """The trace JSON's "beam" entry (docs/formats.md): every node; the attention of nodes on final hypotheses."""
        on_final = {n.id for h in self.hypotheses for n in self.path(h.node)}
        return {"width": self.width, "rule": self.rule, "length_penalty": self.length_penalty,
                "source_tokens": list(self.source_tokens), "prefix_tokens": list(self.prefix_tokens),
                "nodes": [n.to_dict(with_attention=n.id in on_final) for n in self.nodes],
                "hypotheses": [{"node": h.node, "token_ids": list(h.token_ids), "text": h.text,
                                "log_prob": h.log_prob, "score": h.score, "finished": h.finished}
                               for h in self.hypotheses]}


class _Builder:
    def __init__(self, adapter: InspectableModel, prefix: list[int]) -> None:
        self.adapter, self.nodes = adapter, [BeamNode(0, None, -1, prefix[-1] if prefix else -1, "", 0.0, "root")]

    def add(self, parent: int, step: int, token: int, log_prob: float, status: str,
            attention: dict[str, Tensor] | None) -> int:
        self.nodes.append(BeamNode(len(self.nodes), parent, step, token, self.adapter.id_to_token(token), log_prob,
                                   status, attention=attention))
        return len(self.nodes) - 1

    def mark(self, node: int, status: str, score: float | None = None) -> None:
        old = self.nodes[node]
        self.nodes[node] = BeamNode(old.id, old.parent, old.step, old.token_id, old.token, old.log_prob, status, score,
                                    old.attention)


def _check(adapter: InspectableModel, width: int) -> None:
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= min(MAX_BEAM, adapter.vocab_size):
        raise InputError(f"The beam width must be a whole number from 1 to {min(MAX_BEAM, adapter.vocab_size)} "
                         f"(this model's vocabulary has {adapter.vocab_size:,} tokens), got {width!r}.")


def _scored(adapter: InspectableModel, out: StepOutput, prefixes: list[list[int]], max_length: int
            ) -> tuple[Tensor, list[dict[str, Tensor]]]:
    """Log-probabilities (n, V) of the next token of each live prefix, the model's rules applied to them as
    `generate` applies its processors, and each prefix's last attention row per decoder kind."""
    family = adapter.family
    logp = out.logits.float().log_softmax(-1)
    logp = torch.stack([adapter.constrain(p, row, max_length) for p, row in zip(prefixes, logp, strict=True)])
    maps = {k: m for k, m in ((family.decoder_kind, out.decoder_self), (family.cross_kind, out.cross)) if k is not None}
    rows = {k: torch.stack([m[:, :, -1] for m in layers], 1).float() for k, layers in maps.items()}  # (n, L, H, K)
    return logp, [{k: v[b] for k, v in rows.items()} for b in range(len(prefixes))]


def beam_tree(adapter: InspectableModel, text: str, width: int = 4, *, max_steps: int | None = None,
              length_penalty_alpha: float = 0.6) -> BeamTree:
    """The beam tree of `text`: Hugging Face models as `generate(num_beams=width)` with their generation config's
    length penalty and early stopping; ours with the GNMT penalty `length_penalty_alpha` (as `beam_search`)."""
    _check(adapter, width)
    return search_tree(adapter, read_source(adapter, text), width, max_steps=max_steps, alpha=length_penalty_alpha)


def search_tree(adapter: InspectableModel, source: SourceText, width: int, *, max_steps: int | None = None,
                alpha: float = 0.6) -> BeamTree:
    """`beam_tree` of a source already read (ids no check refused: `beam_texts` cuts a long one)."""
    prefix = adapter.decoder_prefix(source)
    steps = step_limit(adapter, len(source.ids), len(prefix), max_steps)
    with adapter.running():
        encoded = adapter.encode(torch.tensor([source.ids]))
        feed = MapsFeed(adapter, encoded, adapter.start_cache(encoded), prefix)
        feed.prefill()
        if adapter.source == "huggingface":
            return _generate_rule(adapter, source, prefix, feed, width, steps)
        return _gnmt_rule(adapter, source, prefix, feed, width, steps, alpha)


def _tree(adapter: InspectableModel, source: SourceText, prefix: list[int], builder: _Builder,
          finals: list[tuple[int, float, bool]], width: int, rule: str, penalty: float) -> BeamTree:
    hypotheses = []
    for node, score, done in finals:
        path = [n.token_id for n in _path(builder.nodes, node)]
        builder.mark(node, "finished" if done else builder.nodes[node].status, score)
        words = adapter.detokenize([i for i in path if i not in adapter.end_ids])
        hypotheses.append(BeamHypothesis(node, tuple(path), words, builder.nodes[node].log_prob,
                                         score, done))
    return BeamTree(tuple(source.tokens), tuple(adapter.prefix_tokens(source)), tuple(builder.nodes), tuple(hypotheses),
                    width, rule, penalty)


def _path(nodes: list[BeamNode], node: int) -> list[BeamNode]:
    out = []
    while (parent := nodes[node].parent) is not None:
        out.append(nodes[node])
        node = parent
    return out[::-1]


def _generate_rule(adapter: InspectableModel, source: SourceText, prefix: list[int], feed: MapsFeed, width: int,
                   steps: int) -> BeamTree:
    """transformers 5's `_beam_search`, one sequence, step by step (see the module's docstring)."""
    gen = adapter.generation_config  # type: ignore[attr-defined]
    penalty = float(gen.length_penalty if gen.length_penalty is not None else 1.0)
    early = gen.early_stopping if gen.early_stopping is not None else False
    eos = sorted(adapter.end_ids)
    keep = max(2, 1 + len(eos)) * width
    prompt_len, max_length = len(prefix), len(prefix) + steps
    builder = _Builder(adapter, prefix)
    running = [(0, list(prefix), 0.0)]  # (node, ids, summed log-probability)
    finished: list[tuple[int, float]] = []  # (node, score), best first, at most `width`
    unsatisfied, cur_len = True, prompt_len
    while True:
        logp, rows = _scored(adapter, feed.outputs[-1], [ids for _, ids, _ in running], max_length)
        total = (logp + torch.tensor([s for _, _, s in running])[:, None]).flatten()
        top, index = torch.topk(total, k=min(keep, total.numel()))
        vocab = logp.shape[1]
        candidates = []
        for rank, (value, flat) in enumerate(zip(top.tolist(), index.tolist(), strict=True)):
            beam, token = divmod(flat, vocab)
            hits = token in eos or cur_len + 1 >= max_length
            node = builder.add(running[beam][0], cur_len - prompt_len, token, value, "pruned", rows[beam])
            candidates.append((node, running[beam][1] + [token], value, hits, rank, beam))
        order = torch.topk(torch.tensor([c[2] + NEG * c[3] for c in candidates]), k=width)[1].tolist()
        next_running = [(candidates[i][0], candidates[i][1], candidates[i][2] + NEG * candidates[i][3]) for i in order]
        all_done = len(finished) >= width and early is True
        scored = []
        for node, _, value, hits, rank, _ in candidates:
            score = value / ((cur_len + 1 - prompt_len) ** penalty)
            score += NEG * all_done + NEG * (not unsatisfied) + NEG * (not (hits and rank < width))
            scored.append((node, score))
        slots = [*finished, *[(None, NEG)] * (width - len(finished)), *scored]  # generate's W slots, then the new
        best = torch.topk(torch.tensor([s for _, s in slots]), k=width)[1].tolist()
        finished = [slots[i] for i in best if slots[i][0] is not None and slots[i][1] > NEG / 2]
        for node, _, _, hits, _, _ in candidates:
            if hits:
                builder.mark(node, "ended")
        for node, _, value in next_running:
            if value > NEG / 2:
                builder.mark(node, "kept")
        running = next_running
        cur_len += 1
        if len(finished) >= width:
            best_length = (max_length if early == "never" and penalty > 0 else cur_len) - prompt_len
            best_running = running[0][2] / (best_length ** penalty)
            unsatisfied = unsatisfied and best_running > min(s for _, s in finished)
        all_finished = len(finished) >= width and early is True
        if not (unsatisfied and not all_finished and not all(c[3] for c in candidates)):
            break
        feed.reorder([candidates[i][5] for i in order])
        feed.step([candidates[i][1][-1] for i in order])
    return _tree(adapter, source, prefix, builder, [(n, s, True) for n, s in finished], width, "generate", penalty)


def _gnmt_rule(adapter: InspectableModel, source: SourceText, prefix: list[int], feed: MapsFeed, width: int,
               steps: int, alpha: float) -> BeamTree:
    """GNMT's rule (ours; `beam_search` and `eval --beam` read it): the GNMT penalty, an ending counts among the best
    `width` candidates only (`gnmt_step`), stop when no live hypothesis can beat the worst of the best finished."""
    builder = _Builder(adapter, prefix)
    alive: list[tuple[int, list[int], float]] = [(0, list(prefix), 0.0)]
    finished: list[tuple[int, float, float, bool]] = []  # (node, log_prob, score, ended)
    eos = adapter.end_ids
    n_prefix = len(prefix)
    for t in range(steps):
        logp, rows = _scored(adapter, feed.outputs[-1], [ids for _, ids, _ in alive], 1 << 30)
        next_alive: list[tuple[int, list[int], float]] = []
        parents: list[int] = []  # the row each of next_alive continues
        for c in gnmt_step([s for _, _, s in alive], logp, width, eos, len(finished)):
            parent, ids, _ = alive[c.row]
            node = builder.add(parent, t, c.token, c.log_prob, "pruned", rows[c.row])
            if c.fate in ("ended", "finished"):
                builder.mark(node, "ended")
            if c.fate == "finished":
                length = len(ids) - n_prefix + 1  # output tokens plus the end
                finished.append((node, c.log_prob, c.log_prob / length_penalty(length, alpha), True))
            elif c.fate == "kept":
                builder.mark(node, "kept")
                next_alive.append((node, [*ids, c.token], c.log_prob))
                parents.append(c.row)
        alive = next_alive
        if not alive or gnmt_done([f[2] for f in finished], [s for _, _, s in alive], width, alpha, steps) \
                or t + 1 == steps:
            break
        feed.reorder(parents)
        feed.step([ids[-1] for _, ids, _ in alive])
    finished += [(node, s, s / length_penalty(len(ids) - n_prefix, alpha), False) for node, ids, s in alive]
    finished.sort(key=lambda h: (not h[3], -h[2]))
    return _tree(adapter, source, prefix, builder, [(n, score, done) for n, _, score, done in finished[:width]], width,
                 "gnmt", alpha)
