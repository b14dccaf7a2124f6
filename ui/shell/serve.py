"""The server's warm-up: the app's imports and the default model loaded before the server answers.

Streamlit imports a script's modules only when the first browser session arrives, so that visitor would wait for
torch, Altair and Plotly to import and the checkpoint to load (about 3 s of a 5–6 s first page). `app.py` declares
an `st.App` whose lifespan runs `warm_up` at start, so `streamlit run app.py` and `make run`
(`python -m ui.shell.serve`, which is `streamlit run app.py` with the arguments given, e.g. `--server.port 8501`)
both start warm.
"""
from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

APP = Path(__file__).resolve().parents[2] / "app.py"


def warm_up() -> float:
    """Import what every page imports, gzip the JavaScript of a first visit (`ui.static_cache`), load the default
    shipped checkpoint into the shared cache and decode Home's input with it into the cache Home reads (so a first
    visit only draws; the first torch calls are slow), then the models and decodes of Home's offers
    (`ui.links.warm_examples`); returns the seconds it took. Never fails: the app reports problems."""
    began = time.perf_counter()
    import altair  # noqa: F401
    import pandas  # noqa: F401
    import plotly.graph_objects  # noqa: F401

    from transformer import adapters, charts, decode  # noqa: F401
    from transformer.store import list_checkpoints
    from ui import links, models, train, views  # noqa: F401 - what the pages import
    from ui.server import (
        checkpoints_root,
        configure_charts,
        configure_torch,
        first_view_chunks,
        precompress,
        preferred_default,
    )

    from . import sidebar  # noqa: F401

    configure_torch()
    configure_charts()
    try:
        precompress(first_view_chunks())  # a first visit's files, gzip'd before it comes
    except Exception as exc:  # noqa: BLE001 - the files are then read and gzip'd when first asked for
        print(f"static files not read ahead: {type(exc).__name__}: {exc}", file=sys.stderr)
    try:
        name = preferred_default([p.name for p in list_checkpoints(checkpoints_root())])
        home = None if name is None else models.shared_model(f"{models.SHIPPED}:{name}")
        if home is not None:  # Home's first view: its input's decode, into the cache the page reads
            views.read_ahead_greedy(home, views.default_text(home))
    except Exception as exc:  # noqa: BLE001 - the app shows what is wrong with a checkpoint; this is only a head start
        print(f"warm-up skipped: {type(exc).__name__}: {exc}", file=sys.stderr)
    try:
        links.warm_examples()  # Home's toy-model button and example links: their models and decodes
    except Exception as exc:  # noqa: BLE001 - each page loads and decodes what it needs itself
        print(f"examples not warmed: {type(exc).__name__}: {exc}", file=sys.stderr)
    threading.Thread(target=read_ahead_hf_code, name="studio-hf-code", daemon=True).start()
    return time.perf_counter() - began


def read_ahead_hf_code() -> list[str]:
    """Import the transformers code of the models directory's Hugging Face folders, after the server is up, so the
    first open of one only reads its weights (a GPT-2 folder: ~1 s less); returns the folders read ahead. A folder
    the app would refuse is left for the app to explain."""
    from transformer.adapters import HFModelError, import_model_code
    from transformer.store import list_hf_folders
    from ui.server import hf_models_root

    done = []
    for folder in list_hf_folders(hf_models_root()):
        try:
            import_model_code(folder)
        except (HFModelError, ImportError, KeyError, ValueError):
            continue
        done.append(folder.name)
    return done


def nodelay_listeners() -> int:
    """Turn Nagle's algorithm off (TCP_NODELAY) on this process's listening TCP sockets, so that every connection
    they accept sends small writes at once; returns how many sockets it set.

    Streamlit binds its listening socket itself, with `socket.socket(family)`: the socket's protocol number is 0, and
    asyncio turns Nagle's algorithm off only on connections whose protocol is TCP. So every response the server
    wrote as two sends (headers, then body) on a kept-alive connection waited for the browser's delayed ACK: ~40 ms
    for each of the ~130 JavaScript files of a first visit (6 at a time), and for every other request. Accepted
    connections inherit TCP_NODELAY from their listening socket (Linux, BSD), and the lifespan runs after Streamlit
    has bound that socket and before uvicorn accepts on it.
    """
    import gc
    import socket

    count = 0
    for sock in [o for o in gc.get_objects() if issubclass(type(o), socket.socket)]:
        try:
            if (sock.fileno() < 0 or sock.family not in (socket.AF_INET, socket.AF_INET6)
                    or sock.type != socket.SOCK_STREAM or not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)):
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            count += 1
        except OSError:
            continue
    return count


@asynccontextmanager
async def warm_up_lifespan(_app: Any) -> AsyncIterator[None]:
    """`st.App` lifespan: small writes sent at once (`nodelay_listeners`), then warm up (in a worker thread, off the
    event loop) before the server takes requests."""
    from ui.server import server_patches

    if server_patches():
        nodelay_listeners()
    seconds = await asyncio.to_thread(warm_up)
    print(f"Attention Studio: warmed up in {seconds:.1f} s", file=sys.stderr)
    yield


def main() -> None:
    os.chdir(APP.parent)
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *sys.argv[1:]]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
