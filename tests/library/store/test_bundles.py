"""Bundles: a checkpoint as one .zip; uploads are untrusted and must never write outside their directory."""
from __future__ import annotations

import io
import stat
import struct
import zipfile
from pathlib import Path

import pytest
import torch

from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.store import CheckpointError, bundle_bytes, bundles, load_bundle, load_checkpoint, save_checkpoint
from transformer.train import Trainer, checkpoint_from_trainer


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    task = make_task(TaskSpec(name="copy", n_train=32, n_valid=4, min_len=3, max_len=5))
    vocab = task.src_tokenizer.vocab_size
    model_cfg, train_cfg = default_configs("copy", vocab, vocab, model_overrides=dict(d_model=8, n_heads=2, d_ff=16),
                                           train_overrides=dict(batch_size=4, eval_examples=4))
    trainer = Trainer(task, model_cfg, train_cfg)
    trainer.train_step()
    return save_checkpoint(checkpoint_from_trainer(trainer), tmp_path_factory.mktemp("ckpt") / "run")


@pytest.fixture
def files(saved: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in saved.iterdir()}


def make_zip(entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


def assert_nothing_left(workdir: Path) -> None:
    assert not workdir.exists() or not any(workdir.iterdir())


def logits(model: torch.nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(torch.tensor([[4, 5, 6, 2]]), torch.tensor([[1, 4, 5]]))


def test_bundle_round_trip_gives_the_same_model(saved: Path, tmp_path: Path) -> None:
    ckpt = load_bundle(bundle_bytes(saved), tmp_path / "work")
    original = load_checkpoint(saved)
    assert torch.equal(logits(ckpt.model), logits(original.model))
    assert ckpt.name == "run" and ckpt.step == 1 and ckpt.optimizer_state is not None
    assert (tmp_path / "work") in ckpt.path.parents


def test_the_same_checkpoint_gives_the_same_bundle_bytes(saved: Path) -> None:
    data = bundle_bytes(saved)
    assert data == bundle_bytes(saved)
    assert sorted(zipfile.ZipFile(io.BytesIO(data)).namelist()) == sorted(f"run/{p.name}" for p in saved.iterdir())


def test_files_at_the_zip_root_and_macos_junk_are_accepted(files: dict[str, bytes], tmp_path: Path) -> None:
    entries = [(name, data) for name, data in files.items()]
    entries += [("__MACOSX/._config.json", b"junk"), (".DS_Store", b"junk")]
    ckpt = load_bundle(make_zip(entries), tmp_path)
    assert ckpt.name == "uploaded" and ckpt.step == 1
    assert not any(p.name in ("._config.json", ".DS_Store") for p in tmp_path.rglob("*"))


def test_bundle_of_a_directory_that_is_not_a_checkpoint_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a checkpoint directory"):
        bundle_bytes(tmp_path)


def test_upload_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a .zip bundle"):
        load_bundle(b"GIF89a not a zip at all", tmp_path)


def test_upload_over_the_size_limit_is_refused(saved: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundles, "MAX_BUNDLE_BYTES", 1000)
    with pytest.raises(CheckpointError, match="the limit is"):
        load_bundle(bundle_bytes(saved), tmp_path)


def test_bundle_unpacking_past_the_limit_is_refused(saved: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundles, "MAX_UNPACKED_BYTES", 1000)
    with pytest.raises(CheckpointError, match="unpacks to"):
        load_bundle(bundle_bytes(saved), tmp_path / "work")
    assert_nothing_left(tmp_path / "work")


def test_zip_bomb_entry_is_refused(files: dict[str, bytes], tmp_path: Path) -> None:
    bomb = b'{"history": [], "evals": []}' + b" " * (8 * 2**20)
    entries = [(n, d) for n, d in files.items() if n != "history.json"] + [("history.json", bomb)]
    with pytest.raises(CheckpointError, match="compressed suspiciously well"):
        load_bundle(make_zip(entries), tmp_path / "work")


def test_entry_larger_than_it_declares_is_refused(files: dict[str, bytes], tmp_path: Path) -> None:
    data = bytearray(make_zip(list(files.items())))
    entry = data.index(b"PK\x01\x02")  # the central directory's first entry: declare a smaller size
    while not data[entry + 46: entry + 46 + struct.unpack_from("<H", data, entry + 28)[0]].endswith(b".json"):
        entry = data.index(b"PK\x01\x02", entry + 4)
    struct.pack_into("<I", data, entry + 24, 10)
    with pytest.raises(CheckpointError, match="damaged"):
        load_bundle(bytes(data), tmp_path / "work")
    assert_nothing_left(tmp_path / "work")


def symlink_entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


HOSTILE = {
    "parent path": ("../config.json", "outside the bundle"),
    "deep parent path": ("run/../../escape.json", "outside the bundle"),
    "absolute path": ("/tmp/config.json", "absolute"),
    "drive letter": ("C:/config.json", "absolute"),
    "backslashes": ("run\\..\\config.json", "absolute or non-portable"),
    "symlink": (symlink_entry("history.json"), "symbolic link"),
    "unknown file": ("evil.py", "not a checkpoint file"),
    "nested folder": ("a/b/config.json", "not a checkpoint file"),
    "second folder": ("other/history.json", "several folders"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_entries_are_refused_and_nothing_is_written(files: dict[str, bytes], tmp_path: Path,
                                                            case: str) -> None:
    name, message = HOSTILE[case]
    entries = [(f"run/{n}", d) for n, d in files.items() if n != "history.json"] + [(name, b"{}")]
    with pytest.raises(CheckpointError, match=message):
        load_bundle(make_zip(entries), tmp_path / "work")
    assert [p.name for p in tmp_path.iterdir()] in ([], ["work"])
    assert_nothing_left(tmp_path / "work")


def test_duplicate_entries_are_refused(files: dict[str, bytes], tmp_path: Path) -> None:
    entries = list(files.items())
    with pytest.warns(UserWarning, match="Duplicate name"):
        data = make_zip(entries + [("config.json", b"{}")])
    with pytest.raises(CheckpointError, match="twice"):
        load_bundle(data, tmp_path)


def test_invalid_checkpoint_in_a_bundle_names_the_file_and_cleans_up(files: dict[str, bytes], tmp_path: Path) -> None:
    entries = [(f"run/{n}", d) for n, d in files.items() if n != "model.safetensors"]
    with pytest.raises(CheckpointError, match=r"^in the bundle: model.safetensors: file is missing$"):
        load_bundle(make_zip(entries), tmp_path / "work")
    assert_nothing_left(tmp_path / "work")
