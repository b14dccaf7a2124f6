"""`train --device auto|cpu|cuda`: which device and backend a process gets, the one-line error without a GPU,
unchanged CPU runs, and (on a machine with CUDA) checkpoints that load on the CPU."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import transformer.train.device as device_module
from transformer.cli import main
from transformer.store import load_checkpoint
from transformer.train import (
    DeviceError,
    backend_for,
    checkpoint_from_trainer,
    resolve_device,
    trainer_from_checkpoint,
)

TINY = ["--task", "reverse", "--n-train", "200", "--n-valid", "10", "--eval-examples", "10", "--d-model", "16",
        "--heads", "2", "--enc-layers", "1", "--dec-layers", "1", "--d-ff", "32", "--dropout", "0", "--batch-size",
        "16", "--seed", "5"]


def test_each_process_trains_on_the_gpu_of_its_local_rank_or_on_the_cpu() -> None:
    assert resolve_device("auto", gpus=0) == torch.device("cpu")
    assert resolve_device("auto", local_rank=1, gpus=2) == torch.device("cuda", 1)
    assert resolve_device("cuda", local_rank=0, gpus=1) == torch.device("cuda", 0)
    assert resolve_device("cpu", local_rank=1, gpus=2) == torch.device("cpu")
    assert [backend_for(torch.device(d)) for d in ("cpu", "cuda:0")] == ["gloo", "nccl"]
    with pytest.raises(DeviceError, match="^--device cuda but no CUDA device is available$"):
        resolve_device("cuda", gpus=0)
    with pytest.raises(DeviceError, match="process 2 of this machine has no GPU of its own"):
        resolve_device("auto", local_rank=2, gpus=2)  # more processes per machine than GPUs: refused, not shared


def test_device_cuda_without_a_gpu_is_one_error_line_and_writes_nothing(monkeypatch, capsys, tmp_path: Path) -> None:
    monkeypatch.setattr(device_module, "cuda_devices", lambda: 0)
    out = tmp_path / "run"
    assert main(["train", *TINY, "--steps", "2", "--out", str(out), "--device", "cuda"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "error: --device cuda but no CUDA device is available\n" and captured.out == ""
    assert not out.exists()


def test_auto_without_a_gpu_trains_on_the_cpu_exactly_as_device_cpu(monkeypatch, capsys, tmp_path: Path) -> None:
    monkeypatch.setattr(device_module, "cuda_devices", lambda: 0)
    for device in ("auto", "cpu"):
        assert main(["train", *TINY, "--steps", "3", "--out", str(tmp_path / device), "--device", device]) == 0
        assert "batch 16 on cpu" in capsys.readouterr().err  # the start line says where it trains
    auto, cpu = load_checkpoint(tmp_path / "auto"), load_checkpoint(tmp_path / "cpu")
    assert auto.step == cpu.step == 3
    for name, weight in auto.model.state_dict().items():
        assert torch.equal(weight, cpu.model.state_dict()[name]), name


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_training_matches_the_cpu_and_checkpoints_hold_cpu_tensors(tmp_path: Path) -> None:
    assert main(["train", *TINY, "--steps", "3", "--out", str(tmp_path / "gpu"), "--device", "cuda",
                 "--precision", "fp32"]) == 0
    assert main(["train", *TINY, "--steps", "3", "--out", str(tmp_path / "cpu"), "--device", "cpu"]) == 0
    gpu, cpu = load_checkpoint(tmp_path / "gpu"), load_checkpoint(tmp_path / "cpu")
    for name, weight in gpu.model.state_dict().items():
        torch.testing.assert_close(weight, cpu.model.state_dict()[name], atol=1e-4, rtol=1e-3, msg=name)
    trainer = trainer_from_checkpoint(gpu, device="cuda")
    trainer.run(max_steps=4)
    snapshot = checkpoint_from_trainer(trainer)
    tensors = [*snapshot.model.state_dict().values(),
               *(t for s in snapshot.optimizer_state["state"].values() for t in s.values() if torch.is_tensor(t)),
               *(t for t in trainer.state()["model"].values())]
    assert all(t.device.type == "cpu" for t in tensors)
