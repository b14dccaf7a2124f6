"""One cached decoder step of `Seq2SeqTransformer` through the functional API, without nn.Module dispatch.

A greedy step of a small model is about eighty tiny tensor ops; calling the thirty-odd modules around them (hook
checks, attribute lookups, the residual plumbing) costs about a third of the step on a CPU. When every module on
the decoder's path is the plain class the model built, with no hooks (no view's stand-in, no captured
activations), `StepPlan` runs the same ops in the same order with the weights looked up once per decode, so its
results are bit-identical to the module path (tests/library/model/test_step_plan.py). Anything else takes the module
path: `step_plan` returns None. A decode that records the residual stream (the logit lens) passes `residuals`, a list
the step appends that call's stream to, so recording needs no hooks and stays on this path.

A plan lives in the decode's cache, never on the model: the model is shared by every session.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.modules import module as _module

from .attention import KVBuffer, MultiHeadAttention
from .dropout import Dropout
from .layers import DecoderLayer, FeedForward
from .outputs import HeadMask

_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks")
# the exact classes a plan reproduces; a subclass or stand-in may compute something else
_PLAIN = {DecoderLayer, MultiHeadAttention, FeedForward, Dropout, nn.Linear, nn.LayerNorm, nn.Embedding,
          nn.Identity, nn.ModuleList}


def _plain(modules: list[nn.Module]) -> bool:
    if any(getattr(_module, name, None) for name in _GLOBAL_HOOKS):
        return False
    return all(type(m) in _PLAIN and not m.training and not any(getattr(m, t, None) for t in _HOOK_TABLES)
               for m in modules)


def _norm(norm: Any) -> tuple | None:
    """`torch.layer_norm`'s arguments after the input (as F.layer_norm passes them), or None for nn.Identity."""
    if isinstance(norm, nn.Identity):
        return None
    return tuple(norm.normalized_shape), norm.weight, norm.bias, norm.eps, torch.backends.cudnn.enabled


@dataclass(frozen=True)
class _Layer:
    norms: tuple[Any, Any, Any]  # `_norm`'s (a layer's norms are LayerNorms: never None)
    self_in: tuple[Tensor, Tensor]  # packed q/k/v projection
    self_out: tuple[Tensor, Tensor]
    cross_q: tuple[Tensor, Tensor]  # the query third of the packed projection
    cross_out: tuple[Tensor, Tensor]
    cross_k_t: Tensor  # (B, H, Dh, S): the cross keys, transposed once per decode
    cross_v: Tensor
    ff: tuple[Tensor, Tensor, Tensor, Tensor]


class StepPlan:
    """The decoder's weights and this decode's cross keys/values, looked up once; `step` is `decode_step`."""

    def __init__(self, model: Any, cross_kv: list[tuple[Tensor, Tensor]], src_mask: Tensor | None) -> None:
        cfg = model.cfg
        self.pre = cfg.norm == "pre"
        self.src_mask = src_mask  # the mask the cross bias was built from
        self.n_heads, self.d_model, self.max_len = cfg.n_heads, cfg.d_model, cfg.max_len
        self.scale = 1.0 / math.sqrt(cfg.head_dim)
        self.embed_scale, self.embedding, self.positions = model.scale, model.tgt_embed.weight, model.positions
        self.final_norm = _norm(model.decoder_norm)
        self.generator = (model.generator.weight, model.generator.bias)
        d = self.d_model
        self.layers: list[_Layer] = []
        for layer, (k, v) in zip(model.decoder, cross_kv, strict=True):
            n = layer.norms._modules
            sa, ca, ff = layer.self_attn, layer.cross_attn, layer.ff
            self.layers.append(_Layer(
                norms=(_norm(n["0"]), _norm(n["1"]), _norm(n["2"])),
                self_in=(sa.in_proj.weight, sa.in_proj.bias), self_out=(sa.out_proj.weight, sa.out_proj.bias),
                cross_q=(ca.in_proj.weight[:d], ca.in_proj.bias[:d]),
                cross_out=(ca.out_proj.weight, ca.out_proj.bias),
                cross_k_t=k.transpose(-2, -1), cross_v=v,
                ff=(ff.fc1.weight, ff.fc1.bias, ff.fc2.weight, ff.fc2.bias)))
        # the additive 0/-inf bias `attention_weights` builds from the source mask, built once
        self.cross_bias = (None if src_mask is None else torch.zeros(
            src_mask.shape, dtype=cross_kv[0][0].dtype, device=src_mask.device).masked_fill_(~src_mask, float("-inf")))

    def _attend(self, q: Tensor, k_t: Tensor, v: Tensor, bias: Tensor | None, head_mask: Tensor | None,
                out: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """`attention` for one query with its weights, then the output projection (as MultiHeadAttention)."""
        scores = q @ k_t
        weights = (scores * self.scale if bias is None else torch.add(bias, scores, alpha=self.scale)).softmax(-1)
        heads = weights @ v  # (B, H, 1, Dh)
        if head_mask is not None:
            heads = heads * head_mask.view(1, -1, 1, 1).to(heads.dtype)
        return F.linear(heads.reshape(heads.size(0), 1, self.d_model), *out), weights

    def step(self, token: Tensor, self_kv: list[KVBuffer], position: int, head_mask: HeadMask | None,
             residuals: list[list[Tensor]] | None = None) -> tuple[Tensor, tuple[Tensor, ...], tuple[Tensor, ...]]:
        """Logits (B, V) and this step's self/cross weights for tokens (B, 1) at decoder position `position`;
        with `residuals`, appends [embeddings, after layer 1, ..., after layer n] (each (B, 1, D), before the final
        norm: what hooks on the decoder layers would see).

        The sublayers of `DecoderLayer` written out: x + f(norm(x)) pre-norm, norm(x + f(x)) post-norm.
        """
        if position + 1 > self.max_len:
            raise ValueError(f"sequence of {position + 1} tokens is longer than max_len {self.max_len}")
        x = F.embedding(token, self.embedding) * self.embed_scale + self.positions[position: position + 1]
        b, h, pre, norm = token.size(0), self.n_heads, self.pre, torch.layer_norm
        self_maps, cross_maps = [], []
        stream = None if residuals is None else [x]
        for i, layer in enumerate(self.layers):
            hm_self = hm_cross = None
            if head_mask is not None:
                hm_self = head_mask["decoder_self"][i] if "decoder_self" in head_mask else None
                hm_cross = head_mask["cross"][i] if "cross" in head_mask else None
            n0, n1, n2 = layer.norms
            # self-attention over the cache and this token
            q, k, v = F.linear(norm(x, *n0) if pre else x, *layer.self_in).view(b, 3, h, 1, -1).unbind(1)
            k, v = self_kv[i].append(k, v)  # (B, H, position + 1, Dh)
            out, ws = self._attend(q, k.transpose(-2, -1), v, None, hm_self, layer.self_out)
            x = x + out if pre else norm(x + out, *n0)
            # cross-attention to the encoder's keys/values
            q = F.linear(norm(x, *n1) if pre else x, *layer.cross_q).view(b, h, 1, -1)
            out, wc = self._attend(q, layer.cross_k_t, layer.cross_v, self.cross_bias, hm_cross, layer.cross_out)
            x = x + out if pre else norm(x + out, *n1)
            # feed-forward
            w1, b1, w2, b2 = layer.ff
            out = F.linear(torch.relu(F.linear(norm(x, *n2) if pre else x, w1, b1)), w2, b2)
            x = x + out if pre else norm(x + out, *n2)
            self_maps.append(ws)
            cross_maps.append(wc)
            if stream is not None:
                stream.append(x)
        if stream is not None and residuals is not None:
            residuals.append(stream)
        if self.final_norm is not None:
            x = norm(x, *self.final_norm)
        return F.linear(x, *self.generator)[:, -1], tuple(self_maps), tuple(cross_maps)


def step_plan(model: Any, cross_kv: list[tuple[Tensor, Tensor]], src_mask: Tensor | None
              ) -> StepPlan | None:
    """A plan for `model`'s cached decoder steps, or None where the module path must run (training, a hook, a
    module that is not the plain class; checked when the decode starts)."""
    modules = [model.tgt_embed, model.decoder_norm, model.generator, model.drop, *model.decoder.modules()]
    return StepPlan(model, cross_kv, src_mask) if _plain(modules) else None
