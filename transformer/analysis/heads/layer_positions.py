"""Which positions each layer of our decoder-only model has, read from the model's own config (never a name): local
layers (RoPE and a sliding window), global ones (every position, no positions at all: NoPE) and where log-n query
scaling applies. `model_positions` is `adapters.position_scheme` with these said in its sentence; a model without
them reads exactly as the scheme does."""
from __future__ import annotations

from dataclasses import replace

from torch import nn

from ...adapters import InspectableModel, PositionScheme, position_scheme
from ...model import ModelConfig


def _layer_config(network: nn.Module) -> ModelConfig | None:
    """Our decoder-only model's config (the model's own) where it has local layers or log-n scaling, else None."""
    cfg = getattr(network, "cfg", None)
    if isinstance(cfg, ModelConfig) and cfg.architecture == "decoder-only" and (cfg.window or cfg.logn_length):
        return cfg
    return None


def _numbers(layers: list[int]) -> str:
    """0-based layers as the app numbers them: '1', '1 and 3', '1, 3 and 5'."""
    names = [str(i + 1) for i in layers]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _label(layers: list[int], n: int) -> str:
    """'every layer', 'layer 2' or 'layers 1 and 3' (of `n`)."""
    if len(layers) == n:
        return "every layer"
    return f"layer{'s' if len(layers) > 1 else ''} {_numbers(layers)}"


def _which(layers: list[int], n: int) -> str:
    """A sentence's subject: 'Every layer is', 'Layer 2 is', 'Layers 1 and 3 are'."""
    label = _label(layers, n)
    return label[0].upper() + label[1:] + (" are" if 1 < len(layers) < n else " is")


def _split(cfg: ModelConfig) -> tuple[list[int], list[int], list[int]]:
    """(local layers, global layers, layers where log-n scaling can apply), 0-based: a local layer's query sees at
    most its window's keys, so it is scaled only when the window is past the length."""
    n = cfg.n_decoder_layers
    local = [i for i in range(n) if cfg.is_local(i)]
    far = [i for i in range(n) if cfg.logn_length and not (cfg.is_local(i) and cfg.window <= cfg.logn_length)]
    return local, [i for i in range(n) if i not in local], far


def _layers_sentence(cfg: ModelConfig) -> str:
    """Which layers are local and which global, and where log-n scaling applies, in words."""
    n, (local, glob, far) = cfg.n_decoder_layers, _split(cfg)
    parts = []
    if cfg.window:
        parts.append(f"{_which(local, n)} local: RoPE rotates its queries and keys, and each query sees only the "
                     f"{cfg.window:,} latest positions (its own and the {cfg.window - 1:,} before it: a sliding "
                     "window).")
        if glob:
            parts.append(f"{_which(glob, n)} global: each query sees every position, with no positions at all "
                         "(nothing rotated or added: NoPE).")
    length = cfg.logn_length
    if length and not far:
        parts.append(f"Log-n scaling past {length:,} keys never applies: no query sees more than its window's "
                     f"{cfg.window:,}.")
    elif length:
        where = "" if len(far) == n else (f", on {_label(far, n)} only: a local layer's query sees at most "
                                          f"{cfg.window:,} keys")
        parts.append(f"A query that sees n keys, n past {length:,}, is multiplied by ln n / ln {length:,} (log-n "
                     f"scaling{where}), so its weights stay as sharp past {length:,} keys as within them.")
    return " ".join(parts)


def model_positions(adapter: InspectableModel) -> PositionScheme | None:
    """`position_scheme(adapter)`, its sentence saying which layers are local and which global and where log-n
    scaling applies when the model has them (read from our decoder-only model's config)."""
    scheme = position_scheme(adapter)
    cfg = _layer_config(adapter.network)
    if scheme is None or cfg is None:
        return scheme
    return replace(scheme, sentence=f"{scheme.sentence} {_layers_sentence(cfg)}")


def rotating_layers(adapter: InspectableModel) -> tuple[int, ...]:
    """The 0-based layers that rotate (RoPE) where only some do (the others global, with no positions); () where
    every layer has the model's positions."""
    cfg = _layer_config(adapter.network)
    if cfg is None:
        return ()
    rotating = tuple(i for i in range(cfg.n_decoder_layers) if cfg.rotates(i))
    return rotating if len(rotating) < cfg.n_decoder_layers else ()


def positions_summary(adapter: InspectableModel) -> str | None:
    """One line for a model card on our decoder-only model's local and global layers and log-n scaling, read from
    the model ('layers 1 and 3 local (RoPE, window 16) · layers 2 and 4 global (no positions) · ...'); None for a
    model without them."""
    cfg = _layer_config(adapter.network)
    if cfg is None:
        return None
    local, glob, far = _split(cfg)
    n, parts = cfg.n_decoder_layers, []
    if cfg.window:
        parts.append(f"{_label(local, n)} local (RoPE, window {cfg.window:,})")
        if glob:
            parts.append(f"{_label(glob, n)} global (no positions)")
    else:
        parts.append("RoPE" if cfg.positions == "rope" else "sinusoidal table")
    if far:
        parts.append(f"queries log-n scaled past {cfg.logn_length:,} keys")
    return " · ".join(parts)
