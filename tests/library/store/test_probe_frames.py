"""A run's probe frames beside its weights: recorded while training, saved in a safe bounded file, loaded back
validated; checkpoints without frames still load."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.store import (
    MAX_PROBE_FRAMES,
    PROBE_FRAMES,
    CheckpointError,
    bundle_bytes,
    load_bundle,
    load_checkpoint,
    load_probe_frames,
    save_checkpoint,
    thin_frames,
)
from transformer.train import ProbeRecorder, Trainer, checkpoint_from_trainer, probe_trace


def make_trainer(max_steps: int = 8) -> Trainer:
    task = make_task(TaskSpec(name="reverse", n_train=64, n_valid=8, min_len=3, max_len=6))
    vocab = task.src_tokenizer.vocab_size
    model_cfg, train_cfg = default_configs(
        "reverse", vocab, vocab, model_overrides=dict(d_model=16, n_heads=2, d_ff=32, max_len=16),
        train_overrides=dict(batch_size=8, max_steps=max_steps, warmup_steps=2, eval_examples=8, max_seconds=None))
    return Trainer(task, model_cfg, train_cfg)


@pytest.fixture(scope="module")
def recorded() -> tuple[Trainer, ProbeRecorder]:
    trainer = make_trainer()
    recorder = ProbeRecorder("abcdef", frames=4)
    recorder.start(trainer)
    trainer.callbacks.append(recorder)
    trainer.run()
    recorder.finish(trainer)
    return trainer, recorder


@pytest.fixture(scope="module")
def saved(recorded, tmp_path_factory: pytest.TempPathFactory) -> Path:
    trainer, recorder = recorded
    return save_checkpoint(checkpoint_from_trainer(trainer, recorder.timeline), tmp_path_factory.mktemp("c") / "run")


def test_the_recorder_decodes_the_probe_from_the_first_step_to_the_last(recorded) -> None:
    trainer, recorder = recorded
    steps = [step for step, _ in recorder.timeline]
    assert steps == [0, 2, 4, 6, 8]
    assert all(trace.source_tokens[:6] == tuple("abcdef") for _, trace in recorder.timeline)


def test_a_saved_run_carries_its_frames_and_they_load_back(recorded, saved: Path) -> None:
    _, recorder = recorded
    assert (saved / PROBE_FRAMES).is_file()
    ckpt = load_checkpoint(saved)
    assert [s for s, _ in ckpt.frames] == [s for s, _ in recorder.timeline]
    for (_, back), (_, trace) in zip(ckpt.frames, recorder.timeline, strict=True):
        assert back.source_tokens == trace.source_tokens
        assert back.decoder_input_tokens == trace.decoder_input_tokens
        for kind in trace.kinds:
            assert torch.allclose(back.weights(kind), trace.weights(kind), atol=1e-3)  # fp16 on disk
    assert [s for s, _ in load_probe_frames(saved)] == [s for s, _ in recorder.timeline]


def test_the_file_is_safetensors_with_json_metadata_only(saved: Path) -> None:
    with safe_open(str(saved / PROBE_FRAMES), framework="pt") as fh:
        entries = json.loads(fh.metadata()["frames"])
        assert {fh.get_slice(name).get_dtype() for name in fh.keys()} == {"F16"}
    assert entries[0]["step"] == 0 and entries[0]["family"] == "encoder-decoder"


def test_a_checkpoint_without_frames_still_loads(recorded, tmp_path: Path) -> None:
    trainer, _ = recorded
    path = save_checkpoint(checkpoint_from_trainer(trainer), tmp_path / "old")
    assert not (path / PROBE_FRAMES).exists()
    assert load_checkpoint(path).frames == []
    assert load_checkpoint("checkpoints/reverse").frames == []
    assert load_probe_frames(path) == []


def test_a_bundle_keeps_the_frames(saved: Path, tmp_path: Path) -> None:
    back = load_bundle(bundle_bytes(saved), tmp_path)
    assert len(back.frames) == len(load_probe_frames(saved))


def test_frames_are_thinned_evenly_to_the_bounds(recorded) -> None:
    _, recorder = recorded
    trace = recorder.timeline[0][1]
    many = [(step, trace) for step in range(0, 1000, 7)]
    kept = thin_frames(many)
    assert len(kept) == MAX_PROBE_FRAMES
    assert kept[0][0] == 0 and kept[-1][0] == many[-1][0]
    gaps = {b[0] - a[0] for a, b in zip(kept, kept[1:], strict=False)}
    assert max(gaps) - min(gaps) <= 7
    values = sum(w.numel() for w in trace.maps.values())
    assert len(thin_frames(many, max_values=values * 5)) == 5


def test_saving_more_frames_than_the_bound_keeps_the_bound(recorded, tmp_path: Path) -> None:
    trainer, recorder = recorded
    trace = recorder.timeline[-1][1]
    ckpt = checkpoint_from_trainer(trainer, [(step, trace) for step in range(200)])
    path = save_checkpoint(ckpt, tmp_path / "many")
    assert len(load_checkpoint(path).frames) == MAX_PROBE_FRAMES


def _rewrite(path: Path, tensors: dict | None = None, entries=None) -> None:
    file = path / PROBE_FRAMES
    with safe_open(str(file), framework="pt") as fh:
        old = {name: fh.get_tensor(name) for name in fh.keys()}
        meta = json.loads(fh.metadata()["frames"])
    new = old if tensors is None else tensors(old)
    save_file({k: v.clone().contiguous() for k, v in new.items()}, str(file),
              metadata={"frames": json.dumps(meta if entries is None else entries(meta))})


@pytest.mark.parametrize("change, tensors, entries, message", [
    ("a map's shape does not fit its tokens", lambda t: {**t, "frame.0.cross": t["frame.0.cross"][:, :, :1]}, None,
     "frame 1"),
    ("weights outside [0, 1]", lambda t: {**t, "frame.1.cross": t["frame.1.cross"] + 2}, None, "between 0 and 1"),
    ("a tensor of no frame", lambda t: {**t, "frame.99.cross": t["frame.0.cross"]}, None, "belong to no frame"),
    ("steps out of order", None, lambda e: e[::-1], "increasing order"),
    ("tokens that are not strings", None, lambda e: [{**e[0], "source_tokens": [1, 2]}, *e[1:]], "source_tokens"),
    ("an unknown family", None, lambda e: [{**e[0], "family": "lstm"}, *e[1:]], "unknown model family"),
    ("too many frames", None, lambda e: e * (MAX_PROBE_FRAMES + 1), "at most"),
])
def test_a_bad_frames_file_is_refused_with_its_name(saved: Path, tmp_path: Path, change: str, tensors, entries,
                                                    message: str) -> None:
    copy = Path(shutil.copytree(saved, tmp_path / "run"))
    _rewrite(copy, tensors, entries)
    with pytest.raises(CheckpointError, match=message) as err:
        load_checkpoint(copy)
    assert PROBE_FRAMES in str(err.value)


def test_a_frames_file_that_is_not_safetensors_is_refused(saved: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(saved, tmp_path / "run"))
    (copy / PROBE_FRAMES).write_bytes(b"\x80\x04not safetensors")
    with pytest.raises(CheckpointError, match="not a valid safetensors file"):
        load_probe_frames(copy)


def test_a_probe_the_model_cannot_read_records_nothing(recorded) -> None:
    trainer, _ = recorded
    assert probe_trace(trainer, "a" * 200) is None  # longer than the model reads
