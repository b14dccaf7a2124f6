"""`make run`: `streamlit run app.py`, with the app's imports and the default model loaded before the server opens.

Streamlit imports a script's modules only when the first browser session arrives, so that visitor would wait for
torch, Altair and Plotly to import and the checkpoint to load (about 3 s of a 5–6 s first page). Doing that work
here, before the server answers its health check, leaves the first page only its own decoding and charts.
Arguments are passed on to `streamlit run` (e.g. `--server.port 8501`).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app.py"


def warm_up() -> float:
    """Import what every page imports, load the default shipped checkpoint into the shared cache and decode
    once (first torch calls are slow); returns the seconds it took. Never fails: the app reports problems."""
    began = time.perf_counter()
    import altair  # noqa: F401
    import pandas  # noqa: F401
    import plotly.graph_objects  # noqa: F401

    from transformer import charts, decode  # noqa: F401
    from transformer.store import list_checkpoints
    from ui import models, sidebar, widgets  # noqa: F401
    from ui.settings import checkpoints_root, configure_charts, configure_torch, preferred_default

    configure_torch()
    configure_charts()
    try:
        shipped = {p.name: p for p in list_checkpoints(checkpoints_root())}
        name = preferred_default(list(shipped))
        if name is not None:
            path = shipped[name]
            ckpt = models.load_shared_checkpoint(str(path), models.checkpoint_stamp(path))
            source = next((e["source"] for e in ckpt.metrics.get("examples") or [] if isinstance(e, dict)), "abc")
            decode.greedy_decode(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, str(source))
    except Exception as exc:  # noqa: BLE001 - the app shows what is wrong with a checkpoint; this is only a head start
        print(f"warm-up skipped: {type(exc).__name__}: {exc}", file=sys.stderr)
    return time.perf_counter() - began


def main() -> None:
    os.chdir(APP.parent)
    seconds = warm_up()
    print(f"Attention Studio: warmed up in {seconds:.1f} s", file=sys.stderr)
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *sys.argv[1:]]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
