"""Mixed precision for training: bf16 autocast where the hardware supports it, fp32 master weights."""
from __future__ import annotations

import contextlib
from functools import lru_cache
from pathlib import Path
from typing import ContextManager

import torch

PRECISIONS = ("auto", "fp32", "bf16")


@lru_cache(maxsize=None)
def cpu_supports_bf16() -> bool:
    """True when this CPU has native bf16 arithmetic (AVX-512 BF16 or AMX), read from /proc/cpuinfo."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_precision(precision: str, device: str = "cpu") -> tuple[str, str]:
    """The precision to use ("fp32" or "bf16") for a requested one, and a note saying why (may be empty)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "fp32":
        return "fp32", ""
    supported = device == "cuda" and torch.cuda.is_bf16_supported() or device == "cpu" and cpu_supports_bf16()
    if supported:
        return "bf16", ""
    return "fp32", f"bf16 is not supported on this {device.upper()}; training in fp32"


def autocast(precision: str, device: str = "cpu") -> ContextManager:
    """Autocast to bf16 for a resolved precision "bf16"; a no-op for "fp32"."""
    if precision == "bf16":
        return torch.autocast(device_type=device, dtype=torch.bfloat16)
    return contextlib.nullcontext()
