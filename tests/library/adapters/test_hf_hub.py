"""Hub ids with the hub download replaced by a fake (no network): a repository comes through the same safety checks
as a folder (safetensors only, no custom code, the size cap), only safe files are ever asked for, and a hub id that
cannot be had gives one clear line."""
from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
import torch
import transformers

from tests.helpers.fake_hub import FakeHub, use_fake_hub
from tests.helpers.hf_tiny_models import build
from tests.helpers.hostile_inputs import PickleBomb
from transformer.adapters import HFModelError, HFSeq2Seq, load_pretrained
from transformer.cli import main
from transformer.decode import greedy_decode

TEXT = "the dog sees the bird"
REPO = "someone/tiny-marian"


@pytest.fixture(scope="module")
def marian(tmp_path_factory) -> Path:
    return build("marian", tmp_path_factory.mktemp("hub") / "marian")


def _hub(monkeypatch, tmp_path: Path, repo: Path, online: bool = True) -> FakeHub:
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    return use_fake_hub(monkeypatch, repo, tmp_path / "snapshots", online)


def _repo(marian: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(marian, tmp_path / "repo"))


def test_a_hub_id_downloads_only_safe_files_and_decodes_like_its_folder(marian, tmp_path, monkeypatch):
    repo = _repo(marian, tmp_path)
    (repo / "pytorch_model.bin").write_bytes(pickle.dumps(PickleBomb(tmp_path / "PWNED")))
    (repo / "modeling_evil.py").write_text("raise SystemExit('remote code ran')\n")
    fake = _hub(monkeypatch, tmp_path, repo)
    adapter = HFSeq2Seq.load(REPO)
    assert fake.asked and not {"pytorch_model.bin", "modeling_evil.py"} & {p.name for p in fake.cached.iterdir()}
    assert [s.token_id for s in greedy_decode(adapter, TEXT).steps] == \
        [s.token_id for s in greedy_decode(HFSeq2Seq.load(str(marian)), TEXT).steps]
    HFSeq2Seq.load(REPO)  # now cached: no second download
    assert len(fake.asked) == 1 and not (tmp_path / "PWNED").exists()


def _pickle_only(repo: Path) -> None:
    (repo / "model.safetensors").unlink()
    (repo / "pytorch_model.bin").write_bytes(pickle.dumps(PickleBomb(repo / "PWNED")))


def _remote_code(repo: Path) -> None:
    config = json.loads((repo / "config.json").read_text())
    config["auto_map"] = {"AutoModelForSeq2SeqLM": "modeling_evil.EvilModel"}
    (repo / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("spoil, message", [(_pickle_only, "model.safetensors"), (_remote_code, "custom code")],
                         ids=["pickle weights only", "remote code"])
def test_a_hub_repository_is_refused_as_a_folder_would_be(spoil, message, marian, tmp_path, monkeypatch, capsys):
    repo = _repo(marian, tmp_path)
    spoil(repo)
    _hub(monkeypatch, tmp_path, repo)
    code = main(["decode", REPO, TEXT])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1 and message in err
    assert not (repo / "PWNED").exists()


def test_a_hub_model_above_the_size_cap_is_refused_before_its_weights_load(marian, tmp_path, monkeypatch):
    _hub(monkeypatch, tmp_path, _repo(marian, tmp_path))
    monkeypatch.setattr(transformers.AutoModelForSeq2SeqLM, "from_pretrained",
                        lambda *a, **k: pytest.fail("the weights were loaded"))
    with pytest.raises(HFModelError, match=r"parameters \(~.* GiB in float32\), above the cap"):
        load_pretrained(REPO, max_params=1000)


def test_a_hub_id_the_hub_cannot_give_is_one_line(marian, tmp_path, monkeypatch, capsys):
    fake = _hub(monkeypatch, tmp_path, _repo(marian, tmp_path), online=False)
    code = main(["decode", REPO, TEXT])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and REPO in err and "offline, or no such model" in err
    assert len(fake.asked) == 1


def test_offline_and_not_cached_never_asks_the_hub(marian, tmp_path, monkeypatch):
    fake = _hub(monkeypatch, tmp_path, _repo(marian, tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HFModelError, match="neither a folder nor in the Hugging Face cache, and the hub is offline"):
        load_pretrained(REPO)
    assert fake.asked == []
