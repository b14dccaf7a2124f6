"""Every test here drives whole page runs through Streamlit's AppTest, so every one is marked `slow` (left out of
`make test-fast`); the marker is set once, here, not in each file."""
from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.slow)
