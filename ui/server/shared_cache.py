"""Decodes, traces and stores shared read-only by every session, bounded by their bytes: one least-recently-used
table (`SharedCache`) held by `st.cache_resource`, filled through the `shared` decorator in place of `st.cache_data`
(which pickled a copy of every decode per call and counted entries, not bytes). A view reads the cached value and
never changes it; with $ATTENTION_STUDIO_CHECK_SHARED set, every hit checks that the tensors it holds are unchanged."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import os
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator, TypeVar

import numpy as np
import pandas as pd
import streamlit as st
import torch

from transformer.adapters import InspectableModel

from .settings import shared_cache_bytes

CHECK_ENV = "ATTENTION_STUDIO_CHECK_SHARED"
F = TypeVar("F", bound=Callable[..., Any])


class SharedValueChanged(RuntimeError):
    """A view changed a value every session shares (a bug: views must copy what they change)."""


def _parts(value: Any, seen: set[int]) -> Iterator[Any]:
    """The tensors and arrays `value` holds, each once (dataclasses, containers, data frames' columns and the
    studio's own objects are walked; models and other objects are not)."""
    if id(value) in seen or value is None or isinstance(value, (str, bytes, int, float, bool)):
        return
    seen.add(id(value))
    if isinstance(value, (torch.Tensor, np.ndarray)):
        yield value
    elif isinstance(value, (torch.nn.Module, InspectableModel)):
        return  # the model and what its adapter keeps are the model cache's, never a decode's
    elif isinstance(value, pd.DataFrame):
        for _, column in value.items():
            yield column.to_numpy()
    elif isinstance(value, dict):
        for item in value.values():
            yield from _parts(item, seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _parts(item, seen)
    elif dataclasses.is_dataclass(value) or type(value).__module__.split(".")[0] in ("transformer", "ui"):
        for item in getattr(value, "__dict__", {}).values():  # vars, not a Mapping's items: nothing materialised
            yield from _parts(item, seen)
        for name in getattr(type(value), "__slots__", ()):
            yield from _parts(getattr(value, name, None), seen)


def nbytes(value: Any) -> int:
    """The bytes of the tensors and arrays `value` holds (a tensor's whole storage, each storage once)."""
    storages: set[int] = set()
    total = 0
    for part in _parts(value, set()):
        if isinstance(part, np.ndarray):
            total += part.nbytes
            continue
        storage = part.untyped_storage()
        if storage.data_ptr() not in storages or storage.data_ptr() == 0:
            storages.add(storage.data_ptr())
            total += storage.nbytes()
    return total


def fingerprint(value: Any) -> tuple[tuple[int, str], ...]:
    """Each tensor's and array's identity and a digest of its contents (the read-only check)."""
    out = []
    for part in _parts(value, set()):
        data = part.detach().cpu().contiguous().numpy() if isinstance(part, torch.Tensor) else part
        out.append((id(part), hashlib.blake2b(np.ascontiguousarray(data).tobytes(), digest_size=16).hexdigest()))
    return tuple(out)


class SharedCache:
    """Values by key, least recently used dropped while the bytes kept pass `limit` (one value larger than the
    bound is returned but not kept); one computation per key at a time."""

    def __init__(self, limit: int, check: bool = False) -> None:
        self.limit, self.check = int(limit), check
        self._items: OrderedDict[Hashable, tuple[Any, int, Any]] = OrderedDict()
        self._lock, self._key_locks = threading.Lock(), {}  # type: ignore[var-annotated]
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value kept under `key`, else `compute()` kept (exceptions are not kept)."""
        hit = self._hit(key)
        if hit is not None:
            return hit[0]
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            hit = self._hit(key)
            if hit is not None:
                return hit[0]
            value = compute()
            self.put(key, value)
        with self._lock:
            self._key_locks.pop(key, None)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Keep `value` (measured now and again at each hit) and drop the least recently used past the bound."""
        size = nbytes(value)
        with self._lock:
            if key in self._items:
                self.nbytes -= self._items.pop(key)[1]
            if size > self.limit:
                return
            self._items[key] = (value, size, fingerprint(value) if self.check else None)
            self.nbytes += size
            self._evict()

    def _hit(self, key: Hashable) -> tuple[Any] | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
        value, size, prints = item
        if prints is not None and fingerprint(value)[: len(prints)] != prints:
            raise SharedValueChanged(f"a shared value changed after it was cached ({key!r:.80})")
        grown = nbytes(value)  # a trace's maps materialised from its store on first read count from then on
        with self._lock:
            if key in self._items and grown != size:
                self._items[key] = (value, grown, prints)
                self.nbytes += grown - size
                self._evict(keep=key)
        return (value,)

    def _evict(self, keep: Hashable | None = None) -> None:
        while self.nbytes > self.limit and self._items:
            oldest = next(iter(self._items))
            if oldest == keep and len(self._items) == 1:
                return
            if oldest == keep:
                self._items.move_to_end(keep)
                continue
            self.nbytes -= self._items.pop(oldest)[1]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.nbytes = 0


@st.cache_resource(show_spinner=False)
def shared_cache() -> SharedCache:
    """The one table every session's decodes are kept in (bound: `shared_cache_bytes`)."""
    return SharedCache(shared_cache_bytes(), check=bool(os.environ.get(CHECK_ENV)))


def shared(func: F | None = None, *, spinner: str | None = None) -> Any:
    """`func`'s results kept in the shared cache by its arguments, those named with a leading underscore left out of
    the key (as `st.cache_data` and `st.cache_resource` do); the value returned is the one every session reads.
    `spinner`: what a computation that is not kept yet says while it runs."""
    if func is None:
        return functools.partial(shared, spinner=spinner)
    signature = inspect.signature(func)
    name = f"{func.__module__}.{func.__qualname__}"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key = (name, *((k, _hashable(v)) for k, v in bound.arguments.items() if not k.startswith("_")))
        return shared_cache().get(key, lambda: _run(func, spinner, args, kwargs))

    wrapper.clear = lambda: shared_cache().clear()  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def _run(func: Callable[..., Any], spinner: str | None, args: tuple, kwargs: dict) -> Any:
    if spinner is None:
        return func(*args, **kwargs)
    with st.spinner(spinner):
        return func(*args, **kwargs)


def _hashable(value: Any) -> Hashable:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, set):
        return frozenset(value)
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), hashlib.blake2b(value.detach().cpu().numpy().tobytes()).hexdigest())
    if isinstance(value, np.ndarray):
        return ("array", value.shape, hashlib.blake2b(np.ascontiguousarray(value).tobytes()).hexdigest())
    hash(value)
    return value
