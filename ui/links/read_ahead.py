"""A link's decode, started when the browser asks for the link's page rather than when the page's script runs.

Between asking for a page and running its script, a browser spends most of a second loading Streamlit's frontend
and opening its session; on a large model the decode the page then starts is another second or two (bart-large:
20 steps, 1.5 s). A link names the model and the input, so `ReadAheadLinks` (an ASGI middleware of app.py's
`st.App`) starts that decode in a worker thread as soon as the page is asked for: the plain greedy decode that
Home, Decode, Attention and Compare show first, with the link's top-k, through the cached function the pages call
(`read_ahead_greedy`). The page then finds it in the cache, or waits for the one decode in progress (Streamlit's
cache computes a value once even when two threads ask at the same time); either way it shows exactly what it would
have computed itself.

Only what a new session would decode is read ahead: models every session sees (shipped, saved runs, Hugging Face
folders of the models directory, with a new session's settings), inputs a link names, one decode at a time and
at most `MAX_WAITING` links waiting (more are left to their pages). A link to anything else (an upload, a live
run, an unknown model, text the model cannot read) is left to the page, which says what is wrong.
"""
from __future__ import annotations

import logging
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Awaitable, Callable, Mapping
from urllib.parse import parse_qs

from ui.models import shared_model
from ui.views import read_ahead_greedy

from .link_format import parse_params

THREAD = "studio-read-ahead"
PAGES = ("", "decode", "attention", "compare")  # the pages whose first view is a link's greedy decode ("": Home)
MAX_WAITING = 2
DEFAULT_TOP_K = 5  # what every page but Decode (which reads `topk`) decodes with

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def link_decodes(page: str, params: Mapping[str, str | list[str]]) -> list[tuple[str | None, str, int]]:
    """(model id or None for the default, text, top-k) of each greedy decode the link's page shows first: none
    without a `text`, or for the Attention page fed a reference; Compare's second model too."""
    if page not in PAGES:
        return []
    values, _ = parse_params(params)
    text = values.get("text")
    if text is None or (page == "attention" and values.get("mode") == "teacher"):
        return []
    top_k = values.get("topk", DEFAULT_TOP_K) if page == "decode" else DEFAULT_TOP_K
    decodes = [(values.get("model"), text, top_k)]
    if page == "compare" and values.get("compare"):
        decodes.append((values["compare"], text, DEFAULT_TOP_K))
    return decodes


def read_ahead(decodes: list[tuple[str | None, str, int]]) -> int:
    """Run the decodes into the pages' cache; how many ran (a model not shared or text it cannot read: skipped)."""
    done = 0
    for model_id, text, top_k in decodes:
        active = shared_model(model_id)
        if active is not None and read_ahead_greedy(active, text, top_k):
            done += 1
    return done


class _NoSessionHere(logging.Filter):
    """Drops Streamlit's "missing ScriptRunContext" warning for the read-ahead's thread, which has no session by
    design (the cached functions it calls look for one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not ((record.threadName or "").startswith(THREAD) and "missing ScriptRunContext" in record.getMessage())


class ReadAhead:
    """One worker thread and a bounded number of links waiting for it."""

    def __init__(self, max_waiting: int = MAX_WAITING) -> None:
        self.max_waiting = max_waiting
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD)
        logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_NO_SESSION_HERE)
        self._lock = threading.Lock()
        self._waiting = 0

    def submit(self, decodes: list[tuple[str | None, str, int]]) -> Future | None:
        """Queue the link's decodes; None when there are none or too many links wait already."""
        with self._lock:
            if not decodes or self._waiting >= self.max_waiting:
                return None
            self._waiting += 1
        return self._pool.submit(self._run, decodes)

    def _run(self, decodes: list[tuple[str | None, str, int]]) -> int:
        try:
            return read_ahead(decodes)
        except Exception as exc:  # noqa: BLE001 - only a head start: the page computes (and explains) it again
            print(f"read-ahead skipped: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 0
        finally:
            with self._lock:
                self._waiting -= 1


_NO_SESSION_HERE = _NoSessionHere()  # one instance: adding it again is then a no-op


class ReadAheadLinks:
    """ASGI middleware: a GET of a page's address with a link's `text` starts the page's decode (`ReadAhead`)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], worker: ReadAhead | None = None
                 ) -> None:
        self.app = app
        self.worker = worker or ReadAhead()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "GET" and scope.get("query_string"):
            page = scope.get("path", "").rstrip("/").rsplit("/", 1)[-1]  # after any base path
            if page in PAGES:
                params = parse_qs(scope["query_string"].decode("utf-8", "replace"), keep_blank_values=True)
                self.worker.submit(link_decodes(page, params))
        await self.app(scope, receive, send)
