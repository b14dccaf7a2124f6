"""The logit lens: what each decoder layer would predict at each step, read through the model's own output
function (`InspectableModel.output_head`: its final norm, T5's rescaling, the projection and its bias), as in
nostalgebraist's "interpreting GPT: the logit lens" (2020); see docs/lens-and-beams.md.

A layer's prediction at a step is softmax(output_head(residual after that layer)) over the tokens the step could
emit: the ids the model's rules ban there (`constrain`, recorded by the decode) are left out of every layer's
distribution, the final one included. The last layer's lens is then the step's own distribution. Per layer and
step: the top-k tokens, the rank (1 = most probable) and probability of the token the decode chose, the entropy
and KL(final || layer), both in nats.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import torch
from torch import Tensor

from ...adapters import InspectableModel, fast_output_head, model_lock
from ...decode import DecodeResult, Residuals

LENS_TOP_K = 5
MAX_LENS_TOP_K = 50
MAX_BLOCK_ROWS = 256  # residual rows through the output head at once (256 x 50k floats: 51 MB a block)


class LensError(ValueError):
    """A lens that cannot be computed for this decode (no residuals recorded, a step it does not have)."""


def layer_label(layer: int) -> str:
    """"embeddings" for the stream's first row, "layer n" after layer n."""
    return "embeddings" if layer == 0 else f"layer {layer}"


@dataclass(frozen=True)
class LayerPrediction:
    """One layer's prediction at one step."""

    layer: int  # 0: the embeddings; n: after decoder layer n
    top_k: tuple[tuple[str, float], ...]  # the k most probable tokens, best first
    rank: int  # of the chosen token among the emittable ones (1: the most probable); emittable + 1 if banned
    prob: float  # of the chosen token
    entropy: float  # nats
    kl: float  # KL(final || this layer), nats; 0 for the last layer


@dataclass(frozen=True)
class StepLens:
    """Every layer's prediction at one decode step (0-based), and the token the decode chose there."""

    step: int
    token: str
    token_id: int
    layers: tuple[LayerPrediction, ...]
    n_emittable: int  # tokens the step could emit (the lens's support)

    def to_frame(self) -> pd.DataFrame:
        """One row per layer: layer, label, rank, prob, entropy, kl, top (the most probable token), top_prob."""
        return pd.DataFrame([{"layer": p.layer, "label": layer_label(p.layer), "rank": p.rank, "prob": p.prob,
                              "entropy": p.entropy, "kl": p.kl, "top": p.top_k[0][0] if p.top_k else "",
                              "top_prob": p.top_k[0][1] if p.top_k else 0.0} for p in self.layers])

    def to_dict(self) -> dict:
        return {"step": self.step, "token": self.token, "token_id": self.token_id, "n_emittable": self.n_emittable,
                "layers": [{"layer": p.layer, "rank": p.rank, "prob": p.prob, "entropy": p.entropy, "kl": p.kl,
                            "top_k": [[t, v] for t, v in p.top_k]} for p in self.layers]}


def residuals_of(result: DecodeResult) -> Residuals:
    """The decode's recorded residuals, or LensError saying how to get them."""
    if result.residuals is None:
        raise LensError("this decode did not record the residual stream: decode with residuals=True "
                        "(the command line's --lens) to see what each layer predicts")
    return result.residuals


def _output_head(adapter: InspectableModel, rows: Tensor) -> Tensor:
    """adapter.output_head of rows (N, D) -> (N, V) float32; a Hugging Face head multiplies by its transposed copy (the
    decode's own fast head, `fast_output_head`: the same values up to float rounding, about twice as fast)."""
    network = adapter.network
    if hasattr(network, "get_output_embeddings"):
        with model_lock(network), fast_output_head(network):
            return adapter.output_head(rows).float()
    return adapter.output_head(rows).float()


def _block_log_probs(adapter: InspectableModel, rows: Tensor, banned: Sequence[Tensor]) -> Tensor:
    """Log-probabilities (S, L + 1, V) of residual rows (S, L + 1, D), each step's banned ids left out."""
    s, n, d = rows.shape
    with adapter.running():
        logits = _output_head(adapter, rows.reshape(s * n, d)).view(s, n, -1)
        for i, ids in enumerate(banned):
            if ids.numel():
                logits[i].index_fill_(-1, ids.to(logits.device), float("-inf"))
        return logits.log_softmax(-1)


def lens_log_probs(adapter: InspectableModel, residual: Tensor, banned: Tensor) -> Tensor:
    """Log-probabilities (N, V), float32, of the output function of residual rows (N, D), `banned` ids left out
    (-inf) and the rest renormalised."""
    return _block_log_probs(adapter, residual[None], [banned])[0]


def _block_predictions(adapter: InspectableModel, logp: Tensor, chosen: Sequence[int], k: int
                       ) -> list[tuple[tuple[LayerPrediction, ...], int]]:
    """Per step of `logp` (S, L + 1, V): every layer's prediction (top-k, the chosen token's rank and probability,
    entropy, KL(last layer || layer)) and how many tokens the step could emit."""
    with torch.inference_mode():
        s, n, v = logp.shape
        p = logp.exp()  # banned ids: exactly 0
        finite = logp.nan_to_num(neginf=0.0)  # 0 * -inf would be nan: a banned id adds 0 to every sum below
        # entropy -sum p log p, and KL(final || layer) = sum p_f log p_f - sum p_f log p_layer: two dot products over
        # the vocabulary (vecdot sums pairwise, as sum does; a batched matmul would sum in order, off by ~1e-4)
        entropy = -torch.linalg.vecdot(p, finite)  # (S, L + 1)
        cross = torch.linalg.vecdot(finite, p[:, -1:])  # (S, L + 1): sum_v p_final log p_layer
        kl = (cross[:, -1:] - cross).clamp_min(0.0)
        index = torch.tensor(list(chosen))[:, None, None].expand(-1, n, 1)
        chosen_logp = logp.gather(-1, index)  # (S, L + 1, 1)
        rank = (logp > chosen_logp).view(torch.uint8).sum(-1, dtype=torch.int32) + 1  # a bool sum is ~2x slower
        allowed = (logp[:, -1] > float("-inf")).sum(-1).tolist()  # (S,): the ids the step could emit
        top_p, top_i = logp.topk(min(k, v), dim=-1)
        top_p = top_p.exp()
    ranks, probs, entropies, kls = rank.tolist(), chosen_logp[..., 0].exp().tolist(), entropy.tolist(), kl.tolist()
    banned = (chosen_logp[:, -1, 0] == float("-inf")).tolist()
    top_ids, top_ps = top_i.tolist(), top_p.tolist()
    out = []
    for step in range(s):
        n_allowed, layers = allowed[step], []
        for layer in range(n):
            top = tuple((adapter.id_to_token(i), q) for i, q in zip(top_ids[step][layer][:n_allowed],
                                                                top_ps[step][layer][:n_allowed], strict=True))
            layers.append(LayerPrediction(layer, top, n_allowed + 1 if banned[step] else ranks[step][layer],
                                          probs[step][layer], entropies[step][layer], kls[step][layer]))
        out.append((tuple(layers), n_allowed))
    return out


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_LENS_TOP_K:
        raise LensError(f"the lens shows 1 to {MAX_LENS_TOP_K} tokens per layer, not {k!r}")
    return k


def _lenses(adapter: InspectableModel, result: DecodeResult, steps: range, k: int) -> tuple[StepLens, ...]:
    residuals, k = residuals_of(result), _check_k(k)
    rows = residuals.decoder.shape[1]
    per_block = max(1, MAX_BLOCK_ROWS // rows)
    out: list[StepLens] = []
    for first in range(steps.start, steps.stop, per_block):
        block = range(first, min(first + per_block, steps.stop))
        logp = _block_log_probs(adapter, residuals.decoder[block.start: block.stop],
                                residuals.banned[block.start: block.stop])
        chosen = [result.steps[t].token_id for t in block]
        for t, (layers, n_allowed) in zip(block, _block_predictions(adapter, logp, chosen, k), strict=True):
            out.append(StepLens(t, result.steps[t].token, chosen[t - block.start], layers, n_allowed))
    return tuple(out)


def step_lens(adapter: InspectableModel, result: DecodeResult, step: int, k: int = LENS_TOP_K) -> StepLens:
    """Every decoder layer's prediction at `step` (0-based) of a decode that recorded its residuals."""
    residuals_of(result)
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < len(result.steps):
        shown = step + 1 if isinstance(step, int) and not isinstance(step, bool) else step
        raise LensError(f"the decode has steps 1 to {len(result.steps)}, not {shown!r}")
    return _lenses(adapter, result, range(step, step + 1), k)[0]


def every_step_lens(adapter: InspectableModel, result: DecodeResult, k: int = LENS_TOP_K) -> tuple[StepLens, ...]:
    """`step_lens` of every step, the output head run on blocks of steps (at most `MAX_BLOCK_ROWS` rows at once:
    the memory of that many vocabulary-wide rows)."""
    return _lenses(adapter, result, range(len(result.steps)), k)


@dataclass(frozen=True)
class LensGrid:
    """The layers x steps view: the chosen token's rank and probability at each layer (rows) and step (columns),
    and each layer's most probable token."""

    tokens: tuple[str, ...]  # the chosen token of each step
    ranks: tuple[tuple[int, ...], ...]  # [layer][step]
    probs: tuple[tuple[float, ...], ...]  # [layer][step]
    top: tuple[tuple[str, ...], ...]  # [layer][step]: the layer's most probable token

    @property
    def n_layers(self) -> int:
        return len(self.ranks) - 1

    def to_frame(self) -> pd.DataFrame:
        """One row per (layer, step): layer, label, step (1-based), token, rank, prob, top."""
        return pd.DataFrame([{"layer": layer, "label": layer_label(layer), "step": t + 1, "token": tok,
                              "rank": self.ranks[layer][t], "prob": self.probs[layer][t], "top": self.top[layer][t]}
                             for layer in range(len(self.ranks)) for t, tok in enumerate(self.tokens)])


def lens_grid(lenses: tuple[StepLens, ...]) -> LensGrid:
    """The layers x steps grid of `every_step_lens`."""
    if not lenses:
        raise LensError("the decode has no steps")
    n = len(lenses[0].layers)
    return LensGrid(tuple(s.token for s in lenses),
                    tuple(tuple(s.layers[layer].rank for s in lenses) for layer in range(n)),
                    tuple(tuple(s.layers[layer].prob for s in lenses) for layer in range(n)),
                    tuple(tuple(s.layers[layer].top_k[0][0] if s.layers[layer].top_k else "" for s in lenses)
                          for layer in range(n)))


def lens_dict(lenses: tuple[StepLens, ...], encoder_layer: int | None = None) -> dict:
    """The trace JSON's "lens" entry (docs/formats.md): per step, every layer's top-k, rank, probability, entropy
    and KL; the layer labels; the encoder layer the decoder read (DecoderLens), if not the last."""
    n = len(lenses[0].layers) if lenses else 0
    return {"layers": [layer_label(i) for i in range(n)], "units": "nats",
            **({"encoder_layer": encoder_layer} if encoder_layer is not None else {}),
            "steps": [s.to_dict() for s in lenses]}
