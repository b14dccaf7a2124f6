"""A stand-in for `huggingface_hub.snapshot_download` over one local repository folder: no network in tests."""
from __future__ import annotations

import fnmatch
import shutil
from pathlib import Path

import huggingface_hub
from huggingface_hub.errors import LocalEntryNotFoundError


class FakeHub:
    """`snapshot_download` over one repository folder: nothing cached at first; a download copies the files that
    match `allow_patterns` into a fresh snapshot folder, as the hub client does."""

    def __init__(self, repo: Path, snapshots: Path, online: bool = True) -> None:
        self.repo, self.snapshots, self.online = repo, snapshots, online
        self.cached: Path | None = None
        self.asked: list[list[str] | None] = []  # allow_patterns of each download from the hub

    def __call__(self, repo_id: str, *, allow_patterns=None, local_files_only: bool = False, **_) -> str:
        if local_files_only:
            if self.cached is None:
                raise LocalEntryNotFoundError(f"{repo_id} is not in the cache")
            return str(self.cached)
        self.asked.append(allow_patterns)
        if not self.online:
            raise ConnectionError("no route to huggingface.co")
        target = self.snapshots / repo_id.replace("/", "--")
        target.mkdir(parents=True)
        for path in self.repo.iterdir():
            if allow_patterns is None or any(fnmatch.fnmatch(path.name, p) for p in allow_patterns):
                shutil.copy(path, target / path.name)
        self.cached = target
        return str(target)


def use_fake_hub(monkeypatch, repo: Path, snapshots: Path, online: bool = True) -> FakeHub:
    """Every hub download in this test goes to a FakeHub over `repo`; the hub counts as online unless told."""
    fake = FakeHub(repo, snapshots, online)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return fake
