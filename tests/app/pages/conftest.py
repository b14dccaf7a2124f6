"""Every test here drives whole page runs through Streamlit's AppTest, so every one is marked `slow` (left out of
`make test-fast`); the marker is set once, here, not in each file. `shipped_env`: the app on the shipped checkpoints
(a file that needs another folder defines its own)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import ROOT


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def shipped_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The app on the shipped checkpoints, with fresh, empty runs and Hugging Face folders and no default model."""
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
