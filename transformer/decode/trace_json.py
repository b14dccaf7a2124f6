"""Reading a trace JSON back (`DecodeResult.to_dict`): today's, which names its model family and kinds, and the
older ones written before families existed (three encoder-decoder kinds, no family)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from ..model import family_of, family_with_kinds
from .greedy import DecodeResult, Step
from .trace import AttentionTrace


class TraceFormatError(ValueError):
    """A file that is not a trace JSON; the message is one line for the user."""


def result_from_dict(data: dict[str, Any]) -> DecodeResult:
    """The DecodeResult a trace JSON describes; TraceFormatError for anything else."""
    try:
        attention = data["attention"]
        family = family_of(data["family"]) if "family" in data else family_with_kinds(list(attention))
        maps = {kind: torch.tensor(attention[kind], dtype=torch.float32) for kind in family.kinds}
        trace = AttentionTrace(data["source_tokens"], data["target_tokens"], maps=maps, family=family.name,
                               head_groups=data.get("head_groups"), step_offset=int(data.get("step_offset", 0)))
        steps = tuple(Step(s["token"], int(s.get("token_id", -1)), float(s["prob"]),
                           tuple((str(t), float(p)) for t, p in s["top_k"]), bool(s.get("forced", False)))
                      for s in data["steps"])
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceFormatError(f"not a trace JSON ({type(exc).__name__}: {str(exc)[:160]})") from None
    output = data.get("output_tokens", [s.token for s in steps])
    return DecodeResult(str(data.get("source_text", "")), steps, trace, str(data.get("mode", "greedy")),
                        bool(data.get("finished", False)), " ".join(output))


def load_trace_json(path: str | Path) -> DecodeResult:
    """`result_from_dict` of a file; TraceFormatError for a missing, unreadable or foreign file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceFormatError(f"cannot read {path} as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TraceFormatError(f"{path} is not a trace JSON (not an object)")
    return result_from_dict(data)
