"""Chart specs built once per server for the same inputs: a new session (a shared link, a reload) that shows what
another session already drew gets the spec without Altair building it again.

The chart builders in transformer.charts are pure functions of their arguments, so the key is the builder and a
digest of every argument's content (tokens, the attention tensors' bytes, frames' values): the same numbers give the
same chart, and anything that differs (other weights, another step, a toggle) is another key. Nothing per session is
kept, and an argument the digest cannot read raises instead of being cached by identity. Building Altair charts was
about half of a Decode page's server time (cProfile, AppTest).
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

from .widgets import chart_spec

MAX_SPECS = 256
MAX_ROWS = 200_000  # data rows held over all specs (a Hugging Face model's head grid has ~10k; a row ~100 bytes)
_specs: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
_rows: dict[tuple[str, str], int] = {}
_lock = threading.Lock()


def _feed(digest: Any, value: Any) -> None:
    """Hash `value`'s content (type included) into `digest`."""
    digest.update(type(value).__qualname__.encode())
    if value is None or isinstance(value, (bool, int, float, str)):
        digest.update(repr(value).encode())
    elif isinstance(value, (tuple, list)):
        digest.update(str(len(value)).encode())
        for item in value:
            _feed(digest, item)
    elif isinstance(value, dict):
        for key in sorted(value, key=repr):
            _feed(digest, key)
            _feed(digest, value[key])
    elif isinstance(value, torch.Tensor):
        _feed(digest, value.detach().cpu().numpy())
    elif isinstance(value, np.ndarray):
        digest.update(f"{value.dtype}{value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, pd.DataFrame):
        _feed(digest, [str(c) for c in value.columns])
        _feed(digest, [str(t) for t in value.dtypes])
        digest.update(pd.util.hash_pandas_object(value, index=True).to_numpy().tobytes())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            _feed(digest, getattr(value, field.name))
    else:
        raise TypeError(f"cached_chart cannot fingerprint a {type(value).__qualname__}")


def fingerprint(*args: Any, **kwargs: Any) -> str:
    """A digest of the arguments' content."""
    digest = hashlib.blake2b(digest_size=20)
    _feed(digest, list(args))
    _feed(digest, kwargs)
    return digest.hexdigest()


def cached_chart(build: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The Vega-Lite spec of `build(*args, **kwargs)` (see ui.widgets.chart_spec), built once per content."""
    key = (f"{build.__module__}.{build.__qualname__}", fingerprint(*args, **kwargs))
    with _lock:
        spec = _specs.get(key)
        if spec is not None:
            _specs.move_to_end(key)
    if spec is None:
        spec = chart_spec(build(*args, **kwargs))
        rows = sum(len(data) for data in spec.get("datasets", {}).values() if isinstance(data, list))
        with _lock:
            _specs[key], _rows[key] = spec, rows
            while len(_specs) > MAX_SPECS or (len(_specs) > 1 and sum(_rows.values()) > MAX_ROWS):
                oldest, _ = _specs.popitem(last=False)
                _rows.pop(oldest, None)
    return copy.deepcopy(spec)  # the caller's copy: Streamlit may add to it
