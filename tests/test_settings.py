"""The app's CPU settings: how many threads a training process gets."""
import os

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
