"""Reading a trace JSON back (`DecodeResult.to_dict`, docs/formats.md): format version 4 (the weights may be in an
attention store side file, `store`, written by `save_trace_json` above a size), version 3 (a sampled decode's
settings and draws, the DecoderLens's encoder layer), version 2, which names itself, and version 1, the files
without a `format_version`, both before families existed (three encoder-decoder kinds, no family) and after. A
version newer than this reader is refused with a message that says so. The `lens` and `beam` entries are the CLI's
(`decode --lens`, `--beam`) beside the decode: `result_from_dict` leaves them to their readers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from ..model import StoreError, family_of, family_with_kinds, store_from_tensors, store_tensors
from .greedy import DecodeResult, Step
from .sampling import SampledStep, Sampling
from .trace import TRACE_FORMAT_VERSION, AttentionTrace


class TraceFormatError(ValueError):
    """A file that is not a trace JSON, or one from a newer version; the message is one line for the user."""


def format_version(data: dict[str, Any]) -> int:
    """The trace JSON's format version (1 when the file has none); TraceFormatError for a newer or invalid one."""
    version = data.get("format_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise TraceFormatError(f"not a trace JSON (format_version {str(version)[:40]!r} is not a positive integer)")
    if version > TRACE_FORMAT_VERSION:
        raise TraceFormatError(f"trace format version {version} was written by a newer version of Attention Studio; "
                               f"this one reads versions 1 to {TRACE_FORMAT_VERSION}: update it to open this file")
    return version


def _hidden(data: dict[str, Any], side: str, n: int) -> list[int]:
    """The key positions of one side that `"hidden_keys"` names (0-based, within the side's tokens)."""
    positions = [int(i) for i in data.get("hidden_keys", {}).get(side, [])]
    if any(not 0 <= i < n for i in positions):
        raise ValueError(f"hidden_keys.{side} names a position outside its {n} tokens")
    return positions


SIDE_FILE_ABOVE = 32 << 20  # bytes of float32 maps above which a trace JSON keeps the store in a side file


def save_trace_json(result: DecodeResult, path: str | Path, side_above: int = SIDE_FILE_ABOVE) -> Path | None:
    """Write the trace JSON; a trace with a store whose maps would take more than `side_above` bytes keeps the
    store in `<name>.store.safetensors` beside it (named in the JSON's `store`), not the weights. The side file's
    path, or None."""
    from safetensors.torch import save_file
    path, store = Path(path), result.trace.store
    if store is None or store.dense_nbytes() <= side_above:
        path.write_text(json.dumps(result.to_dict()), encoding="utf-8")
        return None
    side = path.with_name(path.name.removesuffix(".json") + ".store.safetensors")
    tensors, meta = store_tensors(store)
    save_file(tensors, str(side), metadata={"store": json.dumps(meta)})
    path.write_text(json.dumps({**result.to_dict(attention=False), "store": {"file": side.name}}), encoding="utf-8")
    return side


def _side_store(data: dict[str, Any], folder: Path | None) -> Any:
    """The store a version-4 trace names, read from its side file."""
    from safetensors import safe_open
    if folder is None:
        raise TraceFormatError("this trace keeps its attention in a side file: open it with load_trace_json(path)")
    side = folder / Path(str(data["store"]["file"])).name  # beside the JSON, never elsewhere
    try:
        with safe_open(str(side), framework="pt") as f:
            meta = json.loads((f.metadata() or {})["store"])
            tensors = {name: f.get_tensor(name) for name in f.keys()}
        return store_from_tensors(tensors, meta)
    except (OSError, KeyError, ValueError, StoreError) as exc:
        raise TraceFormatError(f"cannot read the attention store {side.name} ({str(exc)[:160]})") from None


def result_from_dict(data: dict[str, Any], folder: Path | None = None) -> DecodeResult:
    """The DecodeResult a trace JSON describes (a side file is read from `folder`); TraceFormatError for anything
    else."""
    format_version(data)  # every version reads the same way: 2 added the field itself, 3 optional keys and "sampled"
    store = _side_store(data, folder) if "store" in data and "attention" not in data else None
    try:
        attention: Any = data.get("attention") if store is None else None  # JSON: a bad shape is a TypeError below
        family = family_of(data["family"]) if "family" in data else family_with_kinds(list(attention))
        maps = None if store is not None else {kind: torch.tensor(attention[kind], dtype=torch.float32)
                                               for kind in family.kinds}
        source, target = data["source_tokens"], data["target_tokens"]
        trace = AttentionTrace(source, target, maps=maps, store=store, family=family,
                               head_groups=data.get("head_groups"),
                               step_offset=int(data.get("step_offset", 0)),
                               hidden_source=_hidden(data, "source", len(source)),
                               hidden_target=_hidden(data, "target", len(target)))
        steps = tuple(Step(s["token"], int(s.get("token_id", -1)), float(s["prob"]),
                           tuple((str(t), float(p)) for t, p in s["top_k"]), bool(s.get("forced", False)))
                      for s in data["steps"])
        sampling, samples = _sampling(data.get("sampling"), len(steps))
        encoder_layer = data.get("encoder_layer")
        encoder_layer = None if encoder_layer is None else int(encoder_layer)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TraceFormatError(f"not a trace JSON ({type(exc).__name__}: {str(exc)[:160]})") from None
    output = data.get("output_tokens", [s.token for s in steps])
    return DecodeResult(str(data.get("source_text", "")), steps, trace, str(data.get("mode", "greedy")),
                        bool(data.get("finished", False)), " ".join(output), encoder_layer=encoder_layer,
                        sampling=sampling, samples=samples)


def _sampling(entry: dict[str, Any] | None, n_steps: int) -> tuple[Sampling | None, tuple[SampledStep | None, ...]]:
    """A sampled decode's settings and, per step, what it was drawn from (None: a forced step)."""
    if entry is None:
        return None, ()
    sampling = Sampling(float(entry["temperature"]), int(entry["top_k"]), float(entry["top_p"]), int(entry["seed"]))
    steps = entry.get("steps", [None] * n_steps)
    if len(steps) != n_steps:
        raise ValueError(f"sampling.steps has {len(steps)} entries for {n_steps} steps")
    return sampling, tuple(None if s is None else SampledStep(tuple((str(t), float(p)) for t, p in s["top_after"]),
                                                              int(s["kept"]), int(s["rank"]), float(s["prob_after"]))
                           for s in steps)


def load_trace_json(path: str | Path) -> DecodeResult:
    """`result_from_dict` of a file; TraceFormatError for a missing, unreadable, foreign or too new file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceFormatError(f"cannot read {path} as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TraceFormatError(f"{path} is not a trace JSON (not an object)")
    try:
        return result_from_dict(data, Path(path).parent)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{path}: {exc}") from None
