"""Gradient attribution of one output step to the source and earlier target tokens (Captum), for any model.

The score explained is log p(chosen token at step t | source, decoder inputs up to t), teacher-forced on the
output, as decoding sees the model (tokens it never emits excluded; a Hugging Face generation config's rules such
as a forced first token are not applied). Two methods, both on the token embeddings (what the model's
token-embedding modules return, before positions are added):
- **Integrated Gradients** (`IntegratedGradients`): baseline = every token embedding zero, positions kept;
  `IG_STEPS` Gauss-Legendre points. Completeness: the attributions sum to score(input) - score(baseline) up to
  the integral's error (see tests).
- **Gradient x input** (`InputXGradient`): one backward pass; a first-order local estimate.
A token's attribution is the sum over its embedding dimensions.

Nothing is put on the shared model. The embeddings go in through a *view* (`substituted`): shallow copies of the
modules on the way to the two embedding modules, which are replaced by modules returning the given tensors;
every other module and every weight is the model's own. Captum differentiates with respect to those tensors
(`torch.autograd.grad`), so it registers no hook and no parameter's `.grad` changes. `adapter.differentiable()` keeps
other callers off a Hugging Face model meanwhile (its lock) and turns dropout off.

A decoder-only model has one token embedding for the prompt and the output (`embedding_paths` gives "" for the
source): its prompt tokens are the "source" of an attribution, the tokens it generated before the step the "target".
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import torch
from torch import Tensor, nn

from ...adapters import InspectableModel, ban
from ...decode import InputError
from ..patching.ablation import check_output, teacher_inputs

IG_STEPS = 32
METHODS = ("integrated_gradients", "gradient_x_input")
METHOD_TITLES = {"integrated_gradients": "Integrated Gradients", "gradient_x_input": "Gradient × input"}


@dataclass(frozen=True)
class Attribution:
    """Attributions of step `step`'s chosen token's log-probability to each source and decoder-input token."""

    method: str
    step: int  # 0-based output step
    source: Tensor  # (S,)
    target: Tensor  # (step + 1,) the decoder inputs the step saw: the start token and the earlier outputs
    #               (a decoder-only model's: (step,) the tokens it generated before the step; its prompt is `source`)
    score: float  # log p(chosen token) at the input

    def source_share(self) -> list[float]:
        """|attribution| of each source token as a share of all tokens' |attribution| (sums to <= 1)."""
        total = float(self.source.abs().sum() + self.target.abs().sum())
        return [float(a) / total if total > 0 else 0.0 for a in self.source.abs()]

    def target_share(self) -> list[float]:
        """|attribution| of each decoder input as a share of all tokens' |attribution|."""
        total = float(self.source.abs().sum() + self.target.abs().sum())
        return [float(a) / total if total > 0 else 0.0 for a in self.target.abs()]


class Given(nn.Module):
    """Stands in for an embedding module on a view: returns the embeddings it holds for ids of their shape."""

    def __init__(self, value: Tensor) -> None:
        super().__init__()
        self.value = value

    def forward(self, ids: Tensor, *args: object, **kwargs: object) -> Tensor:
        if tuple(ids.shape) != tuple(self.value.shape[:-1]):
            raise ValueError(f"embeddings for ids {tuple(self.value.shape[:-1])} given, ids {tuple(ids.shape)} read")
        return self.value


class RowsAt(nn.Module):
    """Stands in for the output projection on a view: projects only row `positions[n]` of batch row n, so the
    logits are (N, 1, V) instead of (N, T, V) (attribution scores one position per row)."""

    def __init__(self, head: nn.Module, positions: Tensor) -> None:
        super().__init__()
        self.head, self.positions = head, positions

    def forward(self, hidden: Tensor) -> Tensor:  # (N, T, D) -> (N, 1, V)
        return self.head(hidden[torch.arange(hidden.size(0)), self.positions][:, None])


def substituted(root: nn.Module, replacements: Mapping[str, nn.Module]) -> nn.Module:
    """A view of `root`: the modules on the way to each dotted path are shallow copies with their own module
    tables, the module at the path is replaced; everything else (weights, other modules, hooks) is root's own."""
    view = copy.copy(root)
    view._modules = dict(root._modules)
    nested: dict[str, dict[str, nn.Module]] = {}
    for path, module in replacements.items():
        name, _, rest = path.partition(".")
        if name not in root._modules:
            raise KeyError(f"{type(root).__name__} has no submodule {name!r}")
        if rest:
            nested.setdefault(name, {})[rest] = module
        else:
            view._modules[name] = module
    for name, inner in nested.items():
        view._modules[name] = substituted(root.get_submodule(name), inner)
    return view


Scorer = Callable[..., Tensor]


def _scorer(adapter: InspectableModel) -> Scorer:
    """forward(*embeddings, src (N, S), tgt_in (N, T), positions (N,), tokens (N,)) -> log p(tokens[n]) at decoder
    position positions[n], (N,); the embeddings are (src_emb (N, S, E), tgt_emb (N, T, E)), or tgt_emb alone for a
    model without a source embedding."""
    paths = [p for p in adapter.embedding_paths() if p]
    banned = sorted(adapter.unemittable_ids)
    head_path = adapter.output_path()  # looked up once: a Hugging Face model names it by walking its modules
    head = adapter.network.get_submodule(head_path)

    def forward(*args: Tensor) -> Tensor:
        embeds, (src, tgt_in, positions, tokens) = args[: len(paths)], args[len(paths):]
        view = substituted(adapter.network, {**{path: Given(e) for path, e in zip(paths, embeds, strict=True)},
                                             head_path: RowsAt(head, positions)})
        logits = adapter.teacher_logits(view, src, tgt_in)  # (N, 1, V): the scored position's row only
        rows = ban(logits[:, 0].float(), banned)
        return rows.log_softmax(-1).gather(-1, tokens[:, None])[:, 0]
    return forward


def _embeddings(adapter: InspectableModel, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, ...]:
    """The token embeddings the model's own modules give the ids (no gradient): source and target, or target only."""
    with torch.no_grad():
        return tuple(e.detach() for e in adapter.token_embeddings(src, tgt_in))


def _batch(adapter: InspectableModel, text: str, output: Sequence[int], steps: Sequence[int]
           ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One example per step: sources (n, S), decoder inputs (n, T), decoder positions (n,), chosen tokens (n,)."""
    check_output(adapter, output, "attribute")
    src, tgt_in = teacher_inputs(adapter, text, output)
    for step in steps:
        if not 0 <= step < len(output):
            raise InputError(f"step {step + 1} does not exist: the output has {len(output)} step(s)")
    first = tgt_in.shape[1] - len(output)  # the decoder position that chooses output[0]
    n = len(steps)
    return (src.expand(n, -1), tgt_in.expand(n, -1), torch.tensor([first + s for s in steps]),
            torch.tensor([int(output[s]) for s in steps]))


def attribute_steps(adapter: InspectableModel, text: str, output: Sequence[int], steps: Sequence[int] | None = None,
                    method: str = "integrated_gradients", n_steps: int = IG_STEPS,
                    max_batch: int = 512) -> list[Attribution]:
    """Attribution of each step's chosen token (output[step]) to the source and the decoder inputs before it.

    All steps go through Captum together (one example per step; the causal mask keeps later decoder inputs at
    exactly zero attribution), `max_batch` rows of interpolated inputs at a time.
    """
    if method not in METHODS:
        raise ValueError(f"unknown attribution method {method!r}; expected one of {', '.join(METHODS)}")
    steps = list(range(len(output))) if steps is None else list(steps)
    src, tgt_in, positions, tokens = _batch(adapter, text, output, steps)
    forward = _scorer(adapter)
    # Captum when asked, not at import: it brings in matplotlib (~0.5 s of every process that imports analysis/)
    from captum.attr import InputXGradient, IntegratedGradients
    with adapter.differentiable():
        embeds = _embeddings(adapter, src, tgt_in)
        args = (src, tgt_in, positions, tokens)
        if method == "integrated_gradients":
            attrs = IntegratedGradients(forward).attribute(
                embeds, baselines=tuple(torch.zeros_like(e) for e in embeds), additional_forward_args=args,
                n_steps=n_steps, internal_batch_size=max(n_steps, max_batch // max(n_steps, 1) * n_steps))
        else:
            attrs = InputXGradient(forward).attribute(tuple(e.requires_grad_() for e in embeds),
                                                      additional_forward_args=args)
        with torch.no_grad():
            scores = forward(*embeds, *args)
    attrs = [a.detach().float().sum(-1) for a in attrs]  # (n, S) and (n, T), or (n, T) alone
    first = tgt_in.shape[1] - len(output)
    if len(attrs) == 2:
        src_attr, tgt_attr = attrs
        return [Attribution(method, s, src_attr[i], tgt_attr[i, first: first + s + 1], float(scores[i]))
                for i, s in enumerate(steps)]
    prompt = first + 1  # decoder-only: the prompt is the source, the tokens generated before the step the target
    return [Attribution(method, s, attrs[0][i, :prompt], attrs[0][i, prompt: prompt + s], float(scores[i]))
            for i, s in enumerate(steps)]


def attribute_step(adapter: InspectableModel, text: str, output: Sequence[int], step: int,
                   method: str = "integrated_gradients", n_steps: int = IG_STEPS) -> Attribution:
    """Attribution of the log-probability of output[step] to the source tokens and the decoder inputs before it."""
    return attribute_steps(adapter, text, output, [step], method, n_steps)[0]


def baseline_score(adapter: InspectableModel, text: str, output: Sequence[int], step: int) -> float:
    """The step's score with every token embedding zero (the Integrated Gradients baseline), masks unchanged."""
    src, tgt_in, positions, tokens = _batch(adapter, text, output, [step])
    with adapter.differentiable(), torch.no_grad():
        zeros = [torch.zeros_like(e) for e in _embeddings(adapter, src, tgt_in)]
        return float(_scorer(adapter)(*zeros, src, tgt_in, positions, tokens)[0])
