"""The app's CPU settings: how many threads a training process gets."""
import os

import pytest

from ui.server import THREADS_ENV, training_threads


def test_a_training_process_leaves_one_core_to_the_pages_and_the_browser(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert training_threads() == 7
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert training_threads() == 1  # never zero
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert training_threads() == 1
    monkeypatch.setenv(THREADS_ENV, "3")
    assert training_threads() == 3  # the operator's setting wins
    monkeypatch.setenv(THREADS_ENV, "lots")
    assert training_threads() == 1  # an unreadable setting falls back to the default


@pytest.mark.parametrize("value, on", [(None, True), ("on", True), ("off", False), ("0", False), ("False", False)])
def test_the_server_patches_have_one_switch(monkeypatch, value, on):
    from ui.server import PATCHES_ENV, server_patches
    if value is None:
        monkeypatch.delenv(PATCHES_ENV, raising=False)
    else:
        monkeypatch.setenv(PATCHES_ENV, value)
    assert server_patches() is on
