"""Falcon: `transformer.h`, `query_key_value` laid out per key/value group (new architecture: the group's query heads,
its key, its value), per head (q, k, v) or with one key and value after every query (multi-query); attention and MLP
in parallel (new architecture or `parallel_attn`), each through its own norm (`ln_attn`, `ln_mlp`) or one shared.

Falcon computes its attention in its own code, not through a kernel the studio can register: its one hook
(`FalconCapture`) redoes the module's own steps (the fused projection, its head split, the rotation with the tables
the model handed it) and takes the keys and values of every position from the cache the call updated. A Falcon with
ALiBi (`alibi: true`) builds its bias in bfloat16 and adds it twice (to the scores and into the mask): no rule
reproduces that exactly, so it is refused by name. Its store forward runs Falcon's SDPA branch for the call (its
eager one makes every weight), under the model's lock, the setting given back in `finally`."""
from __future__ import annotations

import dataclasses
import sys
from contextlib import ExitStack, contextmanager
from typing import Any, Iterator, Mapping, Sequence

import torch
from torch import Tensor, nn

from ...model import AttentionInputs, ScoreRules, StoreError, row_lse, value_norms
from ..capture import first_tensor, projection_weights
from ..errors import HFModelError
from ..path_types import MLP, Projections, Sublayer
from ..store_forward import StoreChunks
from .spec import ALIBI, GROUPED, ROTARY, ROTATE_HALF, Architecture, Kind, Qkv, Stack, grouped_rows


def _projections(attn: Any, config: Any) -> Projections:
    h = config.num_attention_heads
    dh = config.hidden_size // h
    w, bias = attn.query_key_value.weight, attn.query_key_value.bias
    if config.new_decoder_architecture:
        per = h // attn.num_kv_heads
        return grouped_rows(w, bias, (attn.num_kv_heads, per + 2, dh), (slice(0, per), per, per + 1))
    if not config.multi_query:
        return grouped_rows(w, bias, (h, 3, dh), (0, 1, 2))
    return grouped_rows(w, bias, (1, h + 2, dh), (slice(0, h), h, h + 1))


def _parallel(config: Any) -> bool:
    return bool(config.new_decoder_architecture or config.parallel_attn)


def _sublayers(layer: Any, config: Any) -> tuple[Sublayer, ...]:
    if hasattr(layer, "ln_attn"):
        return Sublayer("self", layer.ln_attn), Sublayer(MLP, layer.ln_mlp)
    return (Sublayer("self", layer.input_layernorm),
            Sublayer(MLP, layer.input_layernorm if _parallel(config) else layer.post_attention_layernorm))


def inputs(module: Any, args: tuple, kwargs: dict) -> AttentionInputs:
    """What a Falcon attention's softmax saw in the call that just ran (a forward hook's arguments)."""
    if kwargs.get("alibi") is not None:
        raise HFModelError(f"{type(module).__name__} uses ALiBi, which Falcon builds in bfloat16 and adds twice: "
                           "the studio does not reproduce it exactly, so its insides are not shown")
    modeling: Any = sys.modules[type(module).__module__]
    hidden = args[0] if args else kwargs["hidden_states"]
    b, t = hidden.shape[:2]
    h, d = module.num_heads, module.head_dim
    with torch.no_grad():
        q, k, v = module._split_heads(module.query_key_value(hidden))
        seen = h if module.new_decoder_architecture else module.num_kv_heads  # new layout: keys copied per head
        q = q.transpose(1, 2).reshape(b, h, t, d)
        k, v = (x.transpose(1, 2).reshape(b, seen, t, d) for x in (k, v))
        cos, sin = kwargs["position_embeddings"]
        q, k = modeling.apply_rotary_pos_emb(q, k, cos, sin)
    cache = kwargs.get("layer_past")
    if cache is not None:  # updated by the call: every position's keys and values
        k, v = cache.layers[module.layer_idx].keys, cache.layers[module.layer_idx].values
    n_kv = module.num_kv_heads
    if k.shape[1] > n_kv:  # one key per key/value group, as the model computed it
        k, v = k[:, :: k.shape[1] // n_kv], v[:, :: v.shape[1] // n_kv]
    per_group = h // k.shape[1]
    terms = {}
    mask = kwargs.get("attention_mask")
    if mask is not None:
        mask = mask[..., : k.shape[-2]]
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=q.dtype).masked_fill_(~mask, torch.finfo(q.dtype).min)
        terms["mask"] = mask.detach()
    scale = float(module.inv_norm_factor)
    return AttentionInputs(q.detach(), k.detach(), v.detach(), scale, terms,
                           tuple(i // per_group for i in range(h)), rules=ScoreRules(scale))


def _check(module: Any) -> None:
    """Refuses an ALiBi Falcon before anything runs."""
    if getattr(getattr(module, "config", None), "alibi", False):
        inputs(module, (), {"alibi": True})


class FalconCapture:
    """Falcon's one hook: each layer's softmax inputs (maps) or its store rows, read after the module ran."""

    @contextmanager
    def capturing(self, model: Any, modules: Mapping[str, Sequence[nn.Module]],
                  projections: Mapping[str, Sequence[nn.Module]], chunks: Mapping[str, list[StoreChunks]] | None
                  ) -> Iterator[dict[str, list[AttentionInputs | None]]]:
        """For the call: what each attention's softmax saw (with its output projection's input and output), or,
        with `chunks`, each layer's rows added to its chunks (Falcon's SDPA branch runs meanwhile)."""
        found: dict[str, list[AttentionInputs | None]] = {k: [None] * len(m) for k, m in modules.items()}
        with ExitStack() as undo:
            for kind, mods in modules.items():
                for layer, module in enumerate(mods):
                    _check(module)
                    record = self._storing(chunks[kind][layer], projections[kind][layer]) if chunks is not None \
                        else self._recording(module, found[kind], layer, undo)
                    hook = module.register_forward_hook(
                        lambda m, a, kw, out, record=record: record(m, inputs(m, a, kw)), with_kwargs=True)
                    undo.callback(hook.remove)
            if chunks is not None:
                if next(model.parameters()).device.type != "cpu":
                    raise StoreError(f"{type(model).__name__}: Falcon's store forward runs on the CPU")
                config, before = model.config, model.config._attn_implementation
                config._attn_implementation = "sdpa"  # Falcon's fused branch, for the call (the lock is held)
                undo.callback(setattr, config, "_attn_implementation", before)
            yield found

    @staticmethod
    def _recording(module: Any, found: list[AttentionInputs | None], layer: int, undo: ExitStack) -> Any:
        projected: list[tuple[Tensor, Tensor]] = []

        def out_hook(m: nn.Module, args: tuple, out: Any) -> None:
            projected[:] = [(args[0].detach(), first_tensor(out).detach())]

        undo.callback(module.dense.register_forward_hook(out_hook).remove)

        def record(m: nn.Module, seen: AttentionInputs) -> None:
            merged, output = projected[0] if projected else (None, None)
            found[layer] = dataclasses.replace(seen, merged=merged, output=output)
        return record

    @staticmethod
    def _storing(chunks: StoreChunks, projection: nn.Module) -> Any:
        weight = projection_weights(projection)[0].detach()

        def record(m: nn.Module, seen: AttentionInputs) -> None:
            q, k, t = seen.queries[0], seen.keys[0], seen.queries.shape[2]
            rules = ScoreRules(seen.scale, causal=True, offset=k.shape[1] - t)
            chunks.add(q, k[:, -t:], row_lse(q, k, rules, seen.groups),
                       value_norms(seen.values[0, :, -t:], seen.groups, weight), rules, seen.groups)
        return record


ARCHITECTURE = Architecture(
    model_type="falcon", family="decoder-only",
    stacks={"decoder": Stack("h", final_norm="ln_f")},
    kinds={"self": Kind("decoder", "self_attention", "self_attention.dense", None)},
    mlp={"decoder": (None, None)},
    pre_norm=True, qkv=Qkv(GROUPED, ("query_key_value",)), positions=ROTARY, rope=ROTATE_HALF,
    terms=frozenset({ALIBI}), parallel=_parallel, sublayers=_sublayers, projections=_projections,
    kv_heads=lambda model: int(model.transformer.h[0].self_attention.num_kv_heads), own=FalconCapture())
