"""What an architecture file declares (`Architecture`), the way TransformerLens's `supported_architectures/` does:
its module tree (each stack's layers and norms, each attention kind's module and output projection, as dotted paths),
its norms (pre or post, and how a frozen norm multiplies), the layout of W_Q, W_K, W_V (`Qkv`), its RoPE layout and
the terms its scores carry (windows, soft-capping, sinks, T5's relative bias, ALiBi). The readers every adapter uses
(`layers`, `attention`, `outputs`, `final_norm`, `path`) are generic: they only follow what the file declares."""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from torch import Tensor, nn

from ..errors import HFModelError
from ..path_types import MLP, Projections, ResidualPath, StackPath, Sublayer

# the layouts of W_Q, W_K, W_V
SEPARATE = "separate"  # three projections
SEQUENTIAL = "sequential"  # one fused projection: every query row, then every key row, then every value row
GROUPED = "grouped"  # one fused projection per key/value group: its query heads, its key, its value (GPT-NeoX: one)
# RoPE layouts
ROTATE_HALF = "rotate_half"  # each head's first half (or rotary share) pairs with its second, tables (cos, cos)
HALF_TABLES = "half_tables"  # the rotary tables give each pair's angle once (gpt-oss)
# score terms
WINDOW, SOFTCAP, SINKS, RELATIVE, ALIBI = "window", "softcap", "sinks", "relative", "alibi"
TERMS = (WINDOW, SOFTCAP, SINKS, RELATIVE, ALIBI)
# how a model knows where a token is (`positions.PositionScheme`)
LEARNED, SINUSOIDAL, RELATIVE_BUCKETS, ROTARY = "learned", "sinusoidal", "relative buckets", "rotary"


class OwnCapture(Protocol):
    """The capture of a family whose attention is its own code (Falcon): `capturing` as `hf_capture.recording_hf`."""

    def capturing(self, model: Any, modules: Mapping[str, Sequence[nn.Module]],
                  projections: Mapping[str, Sequence[nn.Module]], chunks: Mapping[str, list[Any]] | None
                  ) -> AbstractContextManager[dict[str, list[Any]]]:
        """For the calls inside: each layer's softmax inputs, or with `chunks` its store rows."""
        ...


def find(root: Any, path: str | None, optional: bool = False) -> Any:
    """The module at dotted `path` under `root` (None for no path, or a missing optional one)."""
    if path is None:
        return None
    found = root
    for part in path.split("."):
        found = getattr(found, part, None)
        if found is None:
            if optional:
                return None
            raise HFModelError(f"{type(root).__name__} has no {path}: its module tree is not the one its "
                               "architecture file declares")
    return found


def base_of(model: nn.Module) -> nn.Module:
    """The base model under a task head (`base_model_prefix`), or the model itself."""
    return getattr(model, getattr(model, "base_model_prefix", ""), None) or model


def heads_of(config: Any) -> tuple[int, int, int]:
    """(query heads, key/value heads, head width) from a config."""
    h = int(config.num_attention_heads)
    kv = int(getattr(config, "num_key_value_heads", None) or h)
    width = getattr(config, "hidden_size", None) or config.d_model
    return h, kv, int(getattr(config, "head_dim", None) or width // h)


def _weight(m: Any) -> tuple[Tensor, Tensor | None]:
    """A projection's weight as nn.Linear holds it, (out, in), and its bias: GPT-2's Conv1D keeps (in, out)."""
    return (m.weight if isinstance(m, nn.Linear) else m.weight.t()), getattr(m, "bias", None)


@dataclass(frozen=True)
class Qkv:
    """Where W_Q, W_K, W_V are in an attention module (dotted paths) and how they are laid out (`SEPARATE`,
    `SEQUENTIAL`, `GROUPED`); `norms`: the query and key norms' paths (Qwen3, OLMo 2, Gemma 3)."""

    layout: str
    names: tuple[str, ...]
    norms: tuple[str, str] | None = None

    def projections(self, attn: nn.Module, config: Any) -> Projections:
        """W_Q, W_K, W_V (out, D) and biases of one attention module."""
        h, kv, dh = heads_of(config)
        qn, kn = (find(attn, n, optional=True) for n in self.norms) if self.norms else (None, None)
        if self.layout == SEPARATE:
            (wq, bq), (wk, bk), (wv, bv) = (_weight(find(attn, n)) for n in self.names)
            return Projections(wq, bq, wk, bk, wv, bv, qn, kn)
        weight, bias = _weight(find(attn, self.names[0]))
        if self.layout == SEQUENTIAL:
            sizes = [h * dh, kv * dh, kv * dh]
            ws = weight.split(sizes, 0)
            bs = (None,) * 3 if bias is None else bias.split(sizes, 0)
            return Projections(ws[0], bs[0], ws[1], bs[1], ws[2], bs[2], qn, kn)
        per = h // kv
        return grouped_rows(weight, bias, (kv, per + 2, dh), (slice(0, per), per, per + 1))


def grouped_rows(weight: Tensor, bias: Tensor | None, shape: tuple[int, ...], picks: tuple[Any, Any, Any]
                 ) -> Projections:
    """W_Q, W_K, W_V of a fused projection whose output rows are laid out as `shape` (the last axis Dh), each picked
    by one index of the first two axes."""
    d = weight.shape[-1]
    ws = [weight.reshape(*shape, d)[:, p].reshape(-1, d) for p in picks]
    bs = [None] * 3 if bias is None else [bias.reshape(shape)[:, p].reshape(-1) for p in picks]
    return Projections(ws[0], bs[0], ws[1], bs[1], ws[2], bs[2])


@dataclass(frozen=True)
class Stack:
    """One residual stream: its layers, position embedding, embedding norm and final norm (dotted paths from the
    base model; the last three may be missing from a model: None there), and its own token embedding where a stack
    has one (an encoder-decoder's; None: the model's input embedding)."""

    layers: str
    position: str | None = None
    embedding_norm: str | None = None
    final_norm: str | None = None
    tokens: str | None = None


@dataclass(frozen=True)
class Kind:
    """One attention kind, in each layer of `stack`: the module that calls the attention kernel, its output
    projection (input: every head's output side by side), its sublayer's norm and the norm on its output (dotted
    paths from the layer)."""

    stack: str
    module: str
    output: str
    norm: str | None
    out_norm: str | None = None


def _never(config: Any) -> bool:
    return False


@dataclass(frozen=True)
class Architecture:
    """One `model_type`: its family, module tree, norms, W_Q/W_K/W_V layout, RoPE layout and score terms; the few
    things a family computes in its own way are functions of its file (`sublayers`, `kv_heads`, `own`,
    `masked_head`)."""

    model_type: str
    family: str  # "encoder-decoder", "decoder-only", "encoder-only"
    stacks: Mapping[str, Stack]
    kinds: Mapping[str, Kind]
    mlp: Mapping[str, tuple[str | None, str | None]]  # stack -> its MLP sublayer's norm and output norm (from a layer)
    pre_norm: bool  # the norm before each sublayer (True) or after each sum (False)
    qkv: Qkv
    positions: str  # LEARNED, SINUSOIDAL, RELATIVE_BUCKETS or ROTARY
    rope: str | None = None  # ROTATE_HALF, HALF_TABLES; None without RoPE
    terms: frozenset[str] = frozenset()  # what its scores carry beyond q.k * scale and the mask
    offset_norms: tuple[str, ...] = ()  # norm classes that multiply by 1 + weight, frozen (Gemma's RMSNorms)
    parallel: Callable[[Any], bool] = _never  # from the config: attention and MLP read the same stream
    position_offset: Callable[[Any], int] = lambda config: 0  # positions before the first token (RoBERTa: pad + 1)
    kv_heads: Callable[[Any], int] | None = None  # key/value heads where the config does not say them
    sublayers: Callable[[nn.Module, Any], tuple[Sublayer, ...]] | None = None  # a layer's, where not declared
    projections: Callable[[nn.Module, Any], Projections] | None = None  # where `qkv` alone cannot say it
    relative_bias: Callable[[nn.Module], Any] | None = None  # an attention's relative bias table (T5), None without
    masked_head: Callable[[nn.Module], Callable[[Tensor], Tensor]] | None = None  # encoder-only: output function
    own: OwnCapture | None = None  # an attention computed in the family's own code: its capture (Falcon's hook)
    notes: str = field(default="", compare=False)

    # -- the module tree -------------------------------------------------------------------------------------
    def layers(self, model: nn.Module, stack: str) -> list[nn.Module]:
        """The layers of `stack`."""
        found = find(base_of(model), self.stacks[stack].layers)
        if not isinstance(found, nn.ModuleList):
            raise HFModelError(f"{type(model).__name__}: {self.stacks[stack].layers} is not a list of layers")
        return list(found)

    def attention(self, model: nn.Module) -> dict[str, list[nn.Module]]:
        """Per kind, each layer's attention module."""
        return {k: [find(layer, spec.module) for layer in self.layers(model, spec.stack)]
                for k, spec in self.kinds.items()}

    def outputs(self, model: nn.Module) -> dict[str, list[nn.Module]]:
        """Per kind, each layer's attention output projection."""
        return {k: [find(layer, spec.output) for layer in self.layers(model, spec.stack)]
                for k, spec in self.kinds.items()}

    def token_path(self, model: Any, stack: str) -> str:
        """The dotted path in `model` of the token embedding `stack` reads (its own, or the model's input embedding;
        a shared embedding has one path per stack)."""
        names = {id(m): name for name, m in model.named_modules()}
        path = self.stacks[stack].tokens
        if path is None:
            return names[id(model.get_input_embeddings())]
        find(base_of(model), path)  # there
        prefix = names[id(base_of(model))]
        return f"{prefix}.{path}" if prefix else path

    def final_norm(self, model: nn.Module, stack: str) -> nn.Module | None:
        """The norm at the end of `stack` (None: post-norm stacks have none)."""
        return find(base_of(model), self.stacks[stack].final_norm, optional=True)

    def n_kv_heads(self, model: nn.Module) -> int:
        """Key/value heads per layer."""
        return self.kv_heads(model) if self.kv_heads is not None else heads_of(model.config)[1]

    # -- the residual path -----------------------------------------------------------------------------------
    def _sublayers(self, layer: nn.Module, stack: str, config: Any) -> tuple[Sublayer, ...]:
        if self.sublayers is not None:
            return self.sublayers(layer, config)
        own = [Sublayer(k, find(layer, s.norm, True), find(layer, s.out_norm, True))
               for k, s in self.kinds.items() if s.stack == stack]
        norm, out_norm = self.mlp[stack]
        return (*own, Sublayer(MLP, find(layer, norm, True), find(layer, out_norm, True)))

    def path(self, model: nn.Module) -> ResidualPath:
        """What writes into and reads each residual stream (`paths.ResidualPath`)."""
        base, config = base_of(model), model.config
        stacks = {name: StackPath(find(base, s.position, True), find(base, s.embedding_norm, True),
                                  tuple(self._sublayers(layer, name, config) for layer in self.layers(model, name)),
                                  find(base, s.final_norm, True))
                  for name, s in self.stacks.items()}
        read = self.projections or self.qkv.projections
        modules = self.attention(model)
        projections = {k: tuple(read(m, config) for m in mods) for k, mods in modules.items()}
        rotated = {k: tuple(mods) for k, mods in modules.items()} if self.rope else {}
        return ResidualPath(self.pre_norm, stacks, projections, rotated, self.parallel(config),
                            self.rope == HALF_TABLES)
