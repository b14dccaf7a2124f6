"""The dictionaries' tests add nothing to `make test-fast` (issue 51: their time goes to `make test`, which runs them
all): every test here is marked `slow`, once, here."""
from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.slow)
