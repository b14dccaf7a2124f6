"""The residual paths of the decoder-only families added for long inputs: Mistral, GPT-NeoX (Pythia), Phi-3, OLMo 2,
Falcon, Gemma 2, Gemma 3 and gpt-oss (`path_types` holds the types, `paths` the older families).

What each adds to the path: GPT-NeoX's fused `query_key_value` is laid out per head (q, k, v of head 1, then of head
2, ...) and its attention and MLP read the same stream (parallel residual), with RoPE on a share of each head's
dimensions; Falcon's fused `query_key_value` is laid out per key/value group (the group's query heads, its key, its
value; the old layouts per head or with one key), parallel too; Phi-3 fuses q, k, v one after another; OLMo 2 has no
norm before its sublayers but one after each (on the sublayer's output, before it joins the stream) and query and
key norms over the whole projection; Gemma 2 and 3 have a norm both before and after each sublayer, RMSNorms that
scale by (1 + w), an embedding scaled by sqrt(d_model) (in the embedding's output, so in `embed`) and, Gemma 3, a
per-head query and key norm; gpt-oss's rotary tables hold each angle once (for both halves) and its attention sinks
are a rule of the softmax, not of the score.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from torch import Tensor

from .path_types import MLP, Projections, StackPath, Sublayer, _separate

PARALLEL = "parallel"  # a path option: each layer's attention and MLP read the layer's input (GPT-NeoX, Falcon)
HALF_TABLES = "half_tables"  # a path option: the rotary tables give each half's angle once (gpt-oss)


def _rows(weight: Tensor, bias: Tensor | None, shape: tuple[int, ...], picks: tuple[Any, Any, Any]) -> Projections:
    """W_Q, W_K, W_V of a fused projection whose output rows are laid out as `shape` (the last axis Dh), each picked
    by one index of the first two axes."""
    d = weight.shape[-1]
    ws = [weight.reshape(*shape, d)[:, p].reshape(-1, d) for p in picks]
    bs = [None] * 3 if bias is None else [bias.reshape(shape)[:, p].reshape(-1) for p in picks]
    return Projections(ws[0], bs[0], ws[1], bs[1], ws[2], bs[2])


def _llama_like(base: Any, out_norms: bool = False, pre: bool = True) -> tuple[tuple[tuple[Sublayer, ...], ...],
                                                                                 tuple[Projections, ...]]:
    """Layers of (self, mlp) with `q_proj`, `k_proj`, `v_proj`: Llama's norms (`pre`), OLMo 2's after each sublayer
    (`out_norms` without `pre`), Gemma's both."""
    def subs(b: Any) -> tuple[Sublayer, ...]:
        if not out_norms:
            return Sublayer("self", b.input_layernorm), Sublayer(MLP, b.post_attention_layernorm)
        before = (b.input_layernorm, b.pre_feedforward_layernorm) if pre else (None, None)
        return (Sublayer("self", before[0], b.post_attention_layernorm),
                Sublayer(MLP, before[1], b.post_feedforward_layernorm))

    proj = tuple(dataclasses.replace(_separate(b.self_attn.q_proj, b.self_attn.k_proj, b.self_attn.v_proj),
                                     q_norm=getattr(b.self_attn, "q_norm", None),
                                     k_norm=getattr(b.self_attn, "k_norm", None)) for b in base.layers)
    return tuple(subs(b) for b in base.layers), proj


def mistral(model: Any) -> tuple:
    """Mistral and gpt-oss: Llama's path (gpt-oss: biased projections, a mixture of experts as the MLP)."""
    base = model.model
    layers, proj = _llama_like(base)
    options = {HALF_TABLES} if model.config.model_type == "gpt_oss" else set()
    return ({"decoder": StackPath(None, None, layers, base.norm)}, {"self": proj},
            {"self": tuple(b.self_attn for b in base.layers)}, options)


def olmo2(model: Any) -> tuple:
    """OLMo 2: a norm after each sublayer, none before; query and key norms over the whole projection."""
    base = model.model
    layers, proj = _llama_like(base, out_norms=True, pre=False)
    return ({"decoder": StackPath(None, None, layers, base.norm)}, {"self": proj},
            {"self": tuple(b.self_attn for b in base.layers)}, set())


def gemma(model: Any) -> tuple:
    """Gemma 2 and 3: a norm before and after each sublayer ((1 + w) RMSNorms); Gemma 3's per-head q and k norms."""
    base = model.model
    layers, proj = _llama_like(base, out_norms=True)
    return ({"decoder": StackPath(None, None, layers, base.norm)}, {"self": proj},
            {"self": tuple(b.self_attn for b in base.layers)}, set())


def phi3(model: Any) -> tuple:
    """Phi-3: Llama's norms, q, k and v fused one after another in `qkv_proj`."""
    base, cfg = model.model, model.config
    dh = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    sizes = [cfg.num_attention_heads * dh] + [cfg.num_key_value_heads * dh] * 2
    layers = tuple((Sublayer("self", b.input_layernorm), Sublayer(MLP, b.post_attention_layernorm))
                   for b in base.layers)
    proj = []
    for b in base.layers:
        fused = b.self_attn.qkv_proj
        ws = fused.weight.split(sizes, 0)
        bs = (None,) * 3 if fused.bias is None else fused.bias.split(sizes, 0)
        proj.append(Projections(ws[0], bs[0], ws[1], bs[1], ws[2], bs[2]))
    return ({"decoder": StackPath(None, None, layers, base.norm)}, {"self": tuple(proj)},
            {"self": tuple(b.self_attn for b in base.layers)}, set())


def gpt_neox(model: Any) -> tuple:
    """GPT-NeoX (Pythia): `query_key_value` per head (q, k, v of each head in turn); parallel residual where the
    config says so; RoPE on the rotary share of each head."""
    base, cfg = model.gpt_neox, model.config
    h = cfg.num_attention_heads
    dh = cfg.hidden_size // h
    layers = tuple((Sublayer("self", b.input_layernorm), Sublayer(MLP, b.post_attention_layernorm))
                   for b in base.layers)
    proj = tuple(_rows(b.attention.query_key_value.weight, b.attention.query_key_value.bias, (h, 3, dh), (0, 1, 2))
                 for b in base.layers)
    options = {PARALLEL} if cfg.use_parallel_residual else set()
    return ({"decoder": StackPath(None, None, layers, base.final_layer_norm)}, {"self": proj},
            {"self": tuple(b.attention for b in base.layers)}, options)


def falcon(model: Any) -> tuple:
    """Falcon: `query_key_value` per key/value group (new architecture: the group's query heads, its key, its value),
    per head (q, k, v) or with one key and value after every query (multi-query); attention and MLP in parallel
    (new architecture or `parallel_attn`), each through its own norm or one shared."""
    base, cfg = model.transformer, model.config
    h = cfg.num_attention_heads
    dh = cfg.hidden_size // h
    parallel = bool(cfg.new_decoder_architecture or cfg.parallel_attn)

    def subs(b: Any) -> tuple[Sublayer, ...]:
        if hasattr(b, "ln_attn"):
            return Sublayer("self", b.ln_attn), Sublayer(MLP, b.ln_mlp)
        return (Sublayer("self", b.input_layernorm),
                Sublayer(MLP, b.input_layernorm if parallel else b.post_attention_layernorm))

    def proj(attn: Any) -> Projections:
        w, bias = attn.query_key_value.weight, attn.query_key_value.bias
        if cfg.new_decoder_architecture:
            per = h // attn.num_kv_heads
            return _rows(w, bias, (attn.num_kv_heads, per + 2, dh), (slice(0, per), per, per + 1))
        if not cfg.multi_query:
            return _rows(w, bias, (h, 3, dh), (0, 1, 2))
        return _rows(w, bias, (1, h + 2, dh), (slice(0, h), h, h + 1))

    layers = tuple(subs(b) for b in base.h)
    return ({"decoder": StackPath(None, None, layers, base.ln_f)}, {"self": tuple(proj(b.self_attention)
                                                                                   for b in base.h)},
            {"self": tuple(b.self_attention for b in base.h)}, {PARALLEL} if parallel else set())


BUILDERS = {"mistral": mistral, "gpt_oss": mistral, "olmo2": olmo2, "gemma2": gemma, "gemma3_text": gemma,
            "phi3": phi3, "gpt_neox": gpt_neox, "falcon": falcon}

