"""The residual path of a model, per family: what writes into each residual stream and what reads it, so the stream
at any position of any layer can be taken apart into a sum of parts (`transformer.analysis.residual_parts`).

A `ResidualPath` names, per stack, the module whose output is the position embedding (or a fixed table), the
embedding norm (BART, BERT, ModernBERT), each layer's sublayers in order (an attention kind or "mlp") with the norm
each goes through (before it in pre-norm models, after the sum in post-norm ones) and the norm on its output before
it joins the stream (OLMo 2, Gemma 2 and 3), and the final norm; and, per attention kind and layer, W_Q, W_K, W_V and
their biases as nn.Linear holds them ((out, D); GPT-2's Conv1D and the fused projections of ours and ModernBERT
split). The types are in `path_types`, the families added for long inputs in `paths_families`. `recording_path`
keeps, for one call, every such norm's input, the position embeddings and the rotary tables (cos, sin) an attention
is handed; the hooks are borrowed for the call and record only the calling thread.
"""
from __future__ import annotations

import dataclasses
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from torch import Tensor, nn

from .path_types import (
    MLP,
    Projections,
    ResidualPath,
    ResidualPathError,
    StackPath,
    Sublayer,
    _fused,
    _separate,
)
from .paths_families import BUILDERS, HALF_TABLES, PARALLEL


# -- ours -----------------------------------------------------------------------------------------------------------
# The networks are read by their attributes' names (each family names its own), so they are typed `Any` here.
def native_path(model: Any) -> ResidualPath:
    """Our three architectures (`Seq2SeqTransformer`, `DecoderOnlyTransformer`, `EncoderOnlyTransformer`)."""
    pre = model.cfg.norm == "pre"

    def layers(mods: Sequence[Any], kinds: Sequence[str]) -> tuple[tuple[Sublayer, ...], ...]:
        return tuple(tuple(Sublayer(name, m.norms[i]) for i, name in enumerate((*kinds, MLP))) for m in mods)

    def proj(attn: Any) -> Projections:
        return _fused(attn.in_proj.weight, attn.in_proj.bias, [attn.d_model] * 3)

    if hasattr(model, "encoder") and hasattr(model, "decoder"):
        stacks = {"encoder": StackPath(model.positions, None, layers(model.encoder, ["encoder_self"]),
                                       model.encoder_norm),
                  "decoder": StackPath(model.positions, None, layers(model.decoder, ["decoder_self", "cross"]),
                                       model.decoder_norm)}
        projections = {"encoder_self": tuple(proj(m.self_attn) for m in model.encoder),
                       "decoder_self": tuple(proj(m.self_attn) for m in model.decoder),
                       "cross": tuple(proj(m.cross_attn) for m in model.decoder)}
        return ResidualPath(pre, stacks, projections)
    kind = "encoder_self" if hasattr(model, "segment_embed") else "self"
    stack = "encoder" if kind == "encoder_self" else "decoder"
    rotates = getattr(model, "inv_freq", None) is not None or bool(model.cfg.logn_length)  # hooks read each call
    rope = {kind: tuple(m.self_attn for m in model.layers)} if rotates else {}
    return ResidualPath(pre, {stack: StackPath(model.positions, None, layers(model.layers, [kind]), model.norm)},
                        {kind: tuple(proj(m.self_attn) for m in model.layers)}, rope)


# -- Hugging Face ---------------------------------------------------------------------------------------------------
PRE_NORM = {"mbart": True, "bart": False, "marian": False, "t5": True, "mt5": True, "gpt2": True, "llama": True,
            "qwen2": True, "qwen3": True, "bert": False, "roberta": False, "distilbert": False, "modernbert": True,
            "mistral": True, "gpt_neox": True, "phi3": True, "olmo2": True, "falcon": True, "gemma3_text": True,
            "gemma2": True, "gpt_oss": True}


def hf_path(model: Any, name: str) -> ResidualPath:
    """A Hugging Face model of a family the studio takes apart (`PRE_NORM`'s keys); others refused in one line."""
    kind = getattr(model.config, "model_type", "")
    if kind not in PRE_NORM:
        raise ResidualPathError(f"{name} ({kind or type(model).__name__}): its residual stream is not taken apart "
                                f"into parts; the studio does this for {', '.join(sorted(PRE_NORM))}")
    if kind in BUILDERS:
        stacks, projections, attention, options = BUILDERS[kind](model)
        return ResidualPath(PRE_NORM[kind], stacks, projections, attention, PARALLEL in options,
                            HALF_TABLES in options)
    build = {"gpt2": _gpt2, "llama": _llama, "qwen2": _llama, "qwen3": _llama, "bert": _bert, "roberta": _bert,
             "distilbert": _distilbert, "modernbert": _modernbert, "t5": _t5, "mt5": _t5}.get(kind, _bart)
    stacks, projections, attention = build(model)
    return ResidualPath(PRE_NORM[kind], stacks, projections, attention)


def _bart(model: Any) -> tuple:
    stacks, projections = {}, {}
    for side in ("encoder", "decoder"):
        stack = model.get_encoder() if side == "encoder" else model.get_decoder()
        kinds = ["encoder_self"] if side == "encoder" else ["decoder_self", "cross"]
        layers = tuple(tuple(Sublayer(k, getattr(m, "self_attn_layer_norm" if k != "cross" else
                                                   "encoder_attn_layer_norm")) for k in kinds)
                       + (Sublayer(MLP, m.final_layer_norm),) for m in stack.layers)
        stacks[side] = StackPath(stack.embed_positions, getattr(stack, "layernorm_embedding", None), layers,
                                 getattr(stack, "layer_norm", None))
        for k in kinds:
            attn = "self_attn" if k != "cross" else "encoder_attn"
            projections[k] = tuple(_separate(getattr(m, attn).q_proj, getattr(m, attn).k_proj,
                                             getattr(m, attn).v_proj) for m in stack.layers)
    return stacks, projections, {}


def _t5(model: Any) -> tuple:
    stacks, projections = {}, {}
    for side in ("encoder", "decoder"):
        stack = model.get_encoder() if side == "encoder" else model.get_decoder()
        kinds = ["encoder_self"] if side == "encoder" else ["decoder_self", "cross"]
        layers = tuple(tuple(Sublayer(k, b.layer[i].layer_norm) for i, k in enumerate([*kinds, MLP]))
                       for b in stack.block)
        stacks[side] = StackPath(None, None, layers, stack.final_layer_norm)
        for i, k in enumerate(kinds):
            attn = "SelfAttention" if k != "cross" else "EncDecAttention"
            projections[k] = tuple(_separate(getattr(b.layer[i], attn).q, getattr(b.layer[i], attn).k,
                                             getattr(b.layer[i], attn).v) for b in stack.block)
    return stacks, projections, {}


def _gpt2(model: Any) -> tuple:
    base = model.transformer
    layers = tuple((Sublayer("self", b.ln_1), Sublayer(MLP, b.ln_2)) for b in base.h)
    d = base.wte.weight.shape[1]
    proj = tuple(_fused(b.attn.c_attn.weight.t(), b.attn.c_attn.bias, [d] * 3) for b in base.h)
    return {"decoder": StackPath(base.wpe, None, layers, base.ln_f)}, {"self": proj}, {}


def _llama(model: Any) -> tuple:
    base = model.model
    layers = tuple((Sublayer("self", b.input_layernorm), Sublayer(MLP, b.post_attention_layernorm))
                   for b in base.layers)
    proj = tuple(dataclasses.replace(_separate(b.self_attn.q_proj, b.self_attn.k_proj, b.self_attn.v_proj),
                                     q_norm=getattr(b.self_attn, "q_norm", None),
                                     k_norm=getattr(b.self_attn, "k_norm", None)) for b in base.layers)
    return ({"decoder": StackPath(None, None, layers, base.norm)}, {"self": proj},
            {"self": tuple(b.self_attn for b in base.layers)})


def _bert(model: Any) -> tuple:
    base = getattr(model, model.base_model_prefix)
    emb, blocks = base.embeddings, base.encoder.layer
    layers = tuple((Sublayer("encoder_self", b.attention.output.LayerNorm), Sublayer(MLP, b.output.LayerNorm))
                   for b in blocks)
    proj = tuple(_separate(b.attention.self.query, b.attention.self.key, b.attention.self.value) for b in blocks)
    return {"encoder": StackPath(emb.position_embeddings, emb.LayerNorm, layers, None)}, {"encoder_self": proj}, {}


def _distilbert(model: Any) -> tuple:
    base = model.distilbert
    blocks = base.transformer.layer
    layers = tuple((Sublayer("encoder_self", b.sa_layer_norm), Sublayer(MLP, b.output_layer_norm)) for b in blocks)
    proj = tuple(_separate(b.attention.q_lin, b.attention.k_lin, b.attention.v_lin) for b in blocks)
    return ({"encoder": StackPath(base.embeddings.position_embeddings, base.embeddings.LayerNorm, layers, None)},
            {"encoder_self": proj}, {})


def _modernbert(model: Any) -> tuple:
    base = model.model
    layers = tuple((Sublayer("encoder_self", b.attn_norm), Sublayer(MLP, b.mlp_norm)) for b in base.layers)
    d = base.embeddings.tok_embeddings.weight.shape[1]
    proj = tuple(_fused(b.attn.Wqkv.weight, b.attn.Wqkv.bias, [d] * 3) for b in base.layers)
    return ({"encoder": StackPath(None, base.embeddings.norm, layers, base.final_norm)}, {"encoder_self": proj},
            {"encoder_self": tuple(b.attn for b in base.layers)})


# -- the capture ----------------------------------------------------------------------------------------------------
@dataclass
class PathRecord:
    """What one call's residual path saw: each norm's input (by module id, in call order), each stack's position
    embeddings (T, D) as the call added them, the rotary tables (cos, sin) each RoPE attention was handed and the
    log-n factors (B, 1, T, 1) its queries were multiplied by (ours, past `logn_length`)."""

    norm_inputs: dict[int, list[Tensor]] = field(default_factory=dict)
    positions: dict[str, Tensor] = field(default_factory=dict)
    rotary: dict[tuple[str, int], tuple[Tensor, Tensor]] = field(default_factory=dict)
    query_scales: dict[tuple[str, int], Tensor] = field(default_factory=dict)

    def norm_input(self, norm: nn.Module | None) -> Tensor:
        """The one input `norm` read in the call, (B, T, D) (ResidualPathError where it did not run once)."""
        found = self.norm_inputs.get(id(norm), [])
        if len(found) != 1:
            raise ResidualPathError(f"{type(norm).__name__} ran {len(found)} times in the call, not once: its input "
                                    "is not known")
        return found[0]


@contextmanager
def recording_path(path: ResidualPath) -> Iterator[PathRecord]:
    """Hooks for the call: every norm's input, each position module's output, each RoPE attention's tables; they
    record only the thread that opened this and are removed on leaving."""
    record, me, handles = PathRecord(), threading.get_ident(), []

    def norm_hook(m: nn.Module, args: tuple, kwargs: Mapping[str, Any]) -> None:
        if threading.get_ident() == me:
            x = args[0] if args else kwargs.get("hidden_states", kwargs.get("input"))
            record.norm_inputs.setdefault(id(m), []).append(x.detach())

    try:
        for norm in path.norms():
            handles.append(norm.register_forward_pre_hook(norm_hook, with_kwargs=True))
        for stack, spec in path.stacks.items():
            if isinstance(spec.position, nn.Module):
                def pos_hook(m: nn.Module, args: tuple, out: Tensor, stack: str = stack) -> None:
                    if threading.get_ident() == me:
                        record.positions[stack] = out.detach().reshape(-1, *out.shape[-2:])[0]

                handles.append(spec.position.register_forward_hook(pos_hook))
        for kind, modules in path.attention.items():
            for layer, module in enumerate(modules):
                def rope_hook(m: nn.Module, args: tuple, kwargs: Mapping[str, Any], key: tuple = (kind, layer)) -> None:
                    tables = kwargs.get("position_embeddings", kwargs.get("rotary"))  # Hugging Face's, ours
                    if threading.get_ident() == me and tables is not None:
                        record.rotary[key] = (tables[0].detach(), tables[1].detach())
                    if threading.get_ident() == me and kwargs.get("q_scale") is not None:
                        record.query_scales[key] = kwargs["q_scale"].detach()

                handles.append(module.register_forward_pre_hook(rope_hook, with_kwargs=True))
        yield record
    finally:
        for handle in handles:
            handle.remove()
