"""Where a process trains: `--device auto|cpu|cuda`, the torch.distributed backend that goes with it, and CPU copies.

Each process of a job takes the GPU of its local rank (`cuda:LOCAL_RANK`); the backend is `nccl` on CUDA and
`gloo` on the CPU. Whatever trains where, what leaves the trainer (checkpoints, resumable state) is on the CPU,
so it loads on any machine.
"""
from __future__ import annotations

from typing import Any

import torch

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(ValueError):
    """The device asked for is not on this machine."""


def cuda_devices() -> int:
    """How many CUDA devices this process sees (0 without CUDA)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_device(requested: str, local_rank: int = 0, gpus: int | None = None) -> torch.device:
    """The device for a process: cpu; cuda:LOCAL_RANK (an error when there is none); auto: cuda when there is one.

    `gpus`: CUDA devices on this machine (default: `cuda_devices()`).
    """
    if requested not in DEVICES:
        raise DeviceError(f"--device must be one of {', '.join(DEVICES)}, got {requested!r}")
    if requested == "cpu":
        return torch.device("cpu")
    gpus = cuda_devices() if gpus is None else gpus
    if gpus == 0:
        if requested == "auto":
            return torch.device("cpu")
        raise DeviceError("--device cuda but no CUDA device is available")
    if local_rank >= gpus:
        raise DeviceError(f"process {local_rank} of this machine has no GPU of its own ({gpus} visible): start at "
                          f"most {gpus} processes per machine (--nproc-per-node), or use --device cpu")
    return torch.device("cuda", local_rank)


def backend_for(device: torch.device) -> str:
    """The torch.distributed backend for processes training on `device`: nccl on CUDA, gloo on the CPU."""
    return "nccl" if device.type == "cuda" else "gloo"


def cpu_copy(value: Any) -> Any:
    """A copy of `value` (tensors nested in dicts and lists) with every tensor on the CPU, detached."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: cpu_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [cpu_copy(v) for v in value]
    return value
