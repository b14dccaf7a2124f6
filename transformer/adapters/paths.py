"""The residual path of a model, per family: what writes into each residual stream and what reads it, so the stream
at any position of any layer can be taken apart into a sum of parts (`transformer.analysis.why.residual_parts`).

A `ResidualPath` names, per stack, the module whose output is the position embedding (or a fixed table), the
embedding norm (BART, BERT, ModernBERT), each layer's sublayers in order (an attention kind or "mlp") with the norm
each goes through (before it in pre-norm models, after the sum in post-norm ones) and the norm on its output before
it joins the stream (OLMo 2, Gemma 2 and 3), and the final norm; and, per attention kind and layer, W_Q, W_K, W_V and
their biases as nn.Linear holds them ((out, D); GPT-2's Conv1D and the fused projections of ours and ModernBERT
split). The types are in `path_types`; a Hugging Face model's path is read from its architecture file
(`architectures/`, `Architecture.path`). `recording_path`
keeps, for one call, every such norm's input, the position embeddings and the rotary tables (cos, sin) an attention
is handed; the hooks are borrowed for the call and record only the calling thread.
"""
from __future__ import annotations

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
    fused_projections,
)


# -- ours -----------------------------------------------------------------------------------------------------------
# The networks are read by their attributes' names (each family names its own), so they are typed `Any` here.
def native_path(model: Any) -> ResidualPath:
    """Our three architectures (`Seq2SeqTransformer`, `DecoderOnlyTransformer`, `EncoderOnlyTransformer`)."""
    pre = model.cfg.norm == "pre"

    def layers(mods: Sequence[Any], kinds: Sequence[str]) -> tuple[tuple[Sublayer, ...], ...]:
        return tuple(tuple(Sublayer(name, m.norms[i]) for i, name in enumerate((*kinds, MLP))) for m in mods)

    def proj(attn: Any) -> Projections:
        return fused_projections(attn.in_proj.weight, attn.in_proj.bias, [attn.d_model] * 3)

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


def hf_path(model: Any, name: str) -> ResidualPath:
    """A Hugging Face model's path, as its architecture file declares it; a model type without a file is refused in
    one line."""
    from .architectures import REGISTRY, supported
    kind = getattr(model.config, "model_type", "")
    if kind not in REGISTRY:
        raise ResidualPathError(f"{name} ({kind or type(model).__name__}): its residual stream is not taken apart "
                                f"into parts; the studio does this for {', '.join(supported())}")
    return REGISTRY[kind].path(model)


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
