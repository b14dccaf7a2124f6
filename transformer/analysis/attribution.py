"""Gradient attribution of one output step to the source and earlier target tokens (Captum).

The score explained is log p(chosen token at step t | source, decoder inputs up to t), teacher-forced on the
output. Two methods, both on the token embeddings (the `nn.Embedding` outputs, before the sqrt(d_model) scale and
the positional encoding are added):
- **Integrated Gradients** (`LayerIntegratedGradients`): baseline = every token embedding zero (the padding
  row), positions kept; `IG_STEPS` Gauss-Legendre points. Completeness: the attributions sum to
  score(input) - score(baseline) up to the integral's error (see tests).
- **Gradient x input** (`LayerGradientXActivation`): one backward pass; a first-order local estimate.
A token's attribution is the sum over its embedding dimensions.

Captum puts hooks on the layers it attributes to. They never go on the shared model: the work is done on a
*view*, a shallow copy of the model whose two embedding modules are new objects sharing the same weight
tensors, so another session decoding with the model at the same time never sees them. Gradients are taken with
`torch.autograd.grad`, so no parameter's `.grad` changes.
"""
from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Sequence

import torch
from captum.attr import LayerGradientXActivation, LayerIntegratedGradients
from torch import Tensor, nn

from ..data import START_ID, Tokenizer
from ..decode import UNEMITTABLE, InputError, ban, encode_source
from ..model import Seq2SeqTransformer

IG_STEPS = 32
METHODS = ("integrated_gradients", "gradient_x_input")
# Captum warns whenever several layers are given; ours are the two embedding tables, independent of each other.
warnings.filterwarnings("ignore", message="Multiple layers provided")
METHOD_TITLES = {"integrated_gradients": "Integrated Gradients", "gradient_x_input": "Gradient × input"}


@dataclass(frozen=True)
class Attribution:
    """Attributions of step `step`'s chosen token's log-probability to each source and decoder-input token."""

    method: str
    step: int  # 0-based output step
    source: Tensor  # (S,)
    target: Tensor  # (step + 1,) the decoder inputs the step saw: <s> and the earlier outputs
    score: float  # log p(chosen token) at the input

    def source_share(self) -> list[float]:
        """|attribution| of each source token as a share of all tokens' |attribution| (sums to <= 1)."""
        total = float(self.source.abs().sum() + self.target.abs().sum())
        return [float(a) / total if total > 0 else 0.0 for a in self.source.abs()]

    def target_share(self) -> list[float]:
        """|attribution| of each decoder input as a share of all tokens' |attribution|."""
        total = float(self.source.abs().sum() + self.target.abs().sum())
        return [float(a) / total if total > 0 else 0.0 for a in self.target.abs()]


def _embedding_view(emb: nn.Embedding) -> nn.Embedding:
    """A new embedding module on the same weight tensor (hooks registered on it stay on it)."""
    return nn.Embedding(emb.num_embeddings, emb.embedding_dim, padding_idx=emb.padding_idx, _weight=emb.weight,
                        _freeze=not emb.weight.requires_grad)


def attribution_view(model: Seq2SeqTransformer) -> Seq2SeqTransformer:
    """A shallow copy of the model sharing every weight, with its own embedding modules to hook."""
    if model.training:
        raise ValueError("attribution needs the model in eval mode (dropout off)")
    view = copy.copy(model)
    view._modules = dict(model._modules)  # the copy's own module table; every module but the embeddings shared
    view._forward_hooks, view._forward_pre_hooks = type(model._forward_hooks)(), type(model._forward_pre_hooks)()
    view._modules["src_embed"] = _embedding_view(model.src_embed)
    view._modules["tgt_embed"] = _embedding_view(model.tgt_embed)
    return view


def _scorer(model: Seq2SeqTransformer):
    """forward(src (N, S), tgt_in (N, T), steps (N,), tokens (N,)) -> log p(tokens[n]) at steps[n], (N,)."""
    def forward(src: Tensor, tgt_in: Tensor, steps: Tensor, tokens: Tensor) -> Tensor:
        logits = model(src, tgt_in)  # (N, T, V)
        rows = ban(logits[torch.arange(logits.size(0)), steps].float(), UNEMITTABLE)  # (N, V), as decoding sees them
        return rows.log_softmax(-1).gather(-1, tokens[:, None])[:, 0]
    return forward


def _check_output(model: Seq2SeqTransformer, output: Sequence[int], steps: Sequence[int]) -> None:
    if not output:
        raise InputError("The model produced no output for this input, so there is nothing to attribute.")
    if len(output) > model.cfg.max_len:
        raise InputError(f"The output has {len(output)} tokens; this model reads at most {model.cfg.max_len}.")
    for step in steps:
        if not 0 <= step < len(output):
            raise InputError(f"step {step + 1} does not exist: the output has {len(output)} step(s)")


def attribute_steps(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, text: str, output: Sequence[int],
                    steps: Sequence[int] | None = None, method: str = "integrated_gradients",
                    n_steps: int = IG_STEPS, max_batch: int = 512) -> list[Attribution]:
    """Attribution of each step's chosen token (output[step]) to the source and the decoder inputs before it.

    All steps go through Captum together (one example per step; the causal mask keeps later decoder inputs at
    exactly zero attribution), `max_batch` rows of interpolated inputs at a time.
    """
    if method not in METHODS:
        raise ValueError(f"unknown attribution method {method!r}; expected one of {', '.join(METHODS)}")
    steps = list(range(len(output))) if steps is None else list(steps)
    _check_output(model, output, steps)
    src_ids, _ = encode_source(model, src_tokenizer, text)
    n = len(steps)
    src = torch.tensor([src_ids]).expand(n, -1)  # (n, S)
    tgt_in = torch.tensor([[START_ID, *output[:-1]]]).expand(n, -1)  # (n, T)
    step_t, tokens = torch.tensor(steps), torch.tensor([int(output[s]) for s in steps])
    view = attribution_view(model)
    forward = _scorer(view)
    layers = [view.src_embed, view.tgt_embed]
    with torch.enable_grad():
        if method == "integrated_gradients":
            pad = model.cfg.pad_id
            attrs = LayerIntegratedGradients(forward, layers).attribute(
                (src, tgt_in), baselines=(torch.full_like(src, pad), torch.full_like(tgt_in, pad)),
                additional_forward_args=(step_t, tokens), n_steps=n_steps,
                internal_batch_size=max(n_steps, max_batch // max(n_steps, 1) * n_steps))
        else:
            attrs = LayerGradientXActivation(forward, layers).attribute((src, tgt_in),
                                                                      additional_forward_args=(step_t, tokens))
        with torch.no_grad():
            scores = forward(src, tgt_in, step_t, tokens)
    src_attr, tgt_attr = (a.detach().float().sum(-1) for a in attrs)  # (n, S), (n, T)
    return [Attribution(method, s, src_attr[i], tgt_attr[i, : s + 1], float(scores[i])) for i, s in enumerate(steps)]


def attribute_step(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, text: str, output: Sequence[int],
                   step: int, method: str = "integrated_gradients", n_steps: int = IG_STEPS) -> Attribution:
    """Attribution of the log-probability of output[step] to the source tokens and the decoder inputs before it."""
    return attribute_steps(model, src_tokenizer, text, output, [step], method, n_steps)[0]


def baseline_score(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, text: str, output: Sequence[int],
                   step: int) -> float:
    """The step's score with every token embedding zero (the Integrated Gradients baseline), masks unchanged."""
    _check_output(model, output, [step])
    src_ids, _ = encode_source(model, src_tokenizer, text)
    view = attribution_view(model)
    zero = lambda module, args, out: torch.zeros_like(out)  # noqa: E731
    hooks = [view.src_embed.register_forward_hook(zero), view.tgt_embed.register_forward_hook(zero)]
    try:
        with torch.no_grad():
            score = _scorer(view)(torch.tensor([src_ids]), torch.tensor([[START_ID, *output[:-1]]]),
                                  torch.tensor([step]), torch.tensor([int(output[step])]))
        return float(score[0])
    finally:
        for hook in hooks:
            hook.remove()
