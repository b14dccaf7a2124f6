"""A small batching queue in front of the models: plain greedy decodes asked for at about the same time (by
several sessions of one server) are decoded as one padded batch (`greedy_decode_many`) instead of taking turns.

A caller's thread hands its decode to the queue and waits for its result. One worker thread takes everything that
arrived, waits `window` seconds more for decodes arriving together (a room opening one QR code), and decodes each
model's requests as one batch (grouped by the network: each session has its own adapter of a shared model), the same
(adapter, text, top-k) once. Decodes that arrive while a batch runs make the
next batch, so a lone decode waits only the window and eight at once take about two batches. Only what
`can_batch` allows goes through the queue; anything else decodes on the caller's thread as before. Results are
what the caller would have computed alone (tests/library/decode/test_batched.py); nothing of one request reaches
another's but the shared, read-only result of an identical request.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ..adapters import InspectableModel
from .batched import can_batch, greedy_decode_many
from .greedy import DecodeResult, greedy_decode

WINDOW_S = 0.005
MAX_BATCH = 16
THREAD = "studio-decode-batch"


@dataclass
class _Request:
    adapter: InspectableModel
    text: str
    top_k: int
    max_steps: int | None
    future: Future = field(default_factory=Future)


class DecodeQueue:
    """Greedy decodes batched across callers (one worker thread, started on first use)."""

    def __init__(self, window: float = WINDOW_S, max_batch: int = MAX_BATCH) -> None:
        self.window, self.max_batch = window, max_batch
        self.batch_sizes: list[int] = []  # how many distinct decodes each batch held (the tests and benchmarks read it)
        self._pending: list[_Request] = []
        self._ready = threading.Condition()
        self._worker: threading.Thread | None = None

    def greedy(self, adapter: InspectableModel, text: str, *, top_k: int = 5, max_steps: int | None = None
               ) -> DecodeResult:
        """`greedy_decode(adapter, text, top_k=top_k, max_steps=max_steps)`, batched with others' where it can be."""
        if not can_batch(adapter):
            return greedy_decode(adapter, text, top_k=top_k, max_steps=max_steps)
        request = _Request(adapter, text, int(top_k), max_steps)
        with self._ready:
            self._pending.append(request)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._run, name=THREAD, daemon=True)
                self._worker.start()
            self._ready.notify()
        return request.future.result()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._pending:
                    self._ready.wait()
            time.sleep(self.window)  # decodes arriving together make one batch
            with self._ready:
                taken, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch:]
            for group in _by_model(taken).values():
                self._decode(group)

    def _decode(self, group: list[_Request]) -> None:
        """One batch of one model's requests, the same decode once; every request gets its result or error."""
        distinct: dict[tuple[int, str, int, int | None], list[_Request]] = {}
        for request in group:  # the same adapter, text and settings: one decode
            distinct.setdefault((id(request.adapter), request.text, request.top_k, request.max_steps),
                                []).append(request)
        by_steps: dict[int | None, list[tuple[int, str, int, int | None]]] = {}
        for key in distinct:
            by_steps.setdefault(key[3], []).append(key)
        for max_steps, keys in by_steps.items():
            self.batch_sizes.append(len(keys))
            try:
                results: list[Any] = greedy_decode_many(
                    group[0].adapter, [k[1] for k in keys], top_k=[k[2] for k in keys], max_steps=max_steps,
                    readers=[distinct[k][0].adapter for k in keys])
            except Exception as exc:  # noqa: BLE001 - a programming error reaches every caller, not the worker
                results = [exc] * len(keys)
            for key, result in zip(keys, results, strict=True):
                for request in distinct[key]:
                    if isinstance(result, Exception):
                        request.future.set_exception(result)
                    else:
                        request.future.set_result(result)


def _by_model(requests: list[_Request]) -> dict[int, list[_Request]]:
    """Requests grouped by the network they run on (each session has its own adapter of a shared network)."""
    groups: dict[int, list[_Request]] = {}
    for request in requests:
        groups.setdefault(id(request.adapter.network), []).append(request)
    return groups


DECODES = DecodeQueue()  # the one queue of a server


def queued_greedy(adapter: InspectableModel, text: str, *, top_k: int = 5,
                  max_steps: int | None = None) -> DecodeResult:
    """A plain greedy decode through the server's queue (`DECODES`); raises InputError as `greedy_decode` does."""
    return DECODES.greedy(adapter, text, top_k=top_k, max_steps=max_steps)
