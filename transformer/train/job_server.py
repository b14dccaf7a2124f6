"""A fork server for training processes: imports torch and the library once, then forks one child per job.

Run as `python -m transformer.train.job_server SOCKET` by `job_launch.ForkServer`. It listens on a Unix socket in a
directory only its user can enter; every connection gets a forked child that runs `job_worker.main` on it.
The server itself never runs a torch op (so no thread pool exists when it forks) and exits when its parent
closes its standard input.

Why not `multiprocessing`'s own fork server: its children re-run the parent's `__main__` script, and inside a
Streamlit script run `__main__` is the page being run, so every training process would run the app.
"""
from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import socket
import sys
from multiprocessing.connection import Connection


def _preload() -> None:
    """Import what a training process needs, including what torch and the library import lazily on first use
    (the optimizer pulls in torch._dynamo: 1.5 s; evaluating word tasks, sacrebleu)."""
    import sacrebleu  # noqa: F401
    import torch._dynamo  # noqa: F401

    from .. import analysis  # noqa: F401
    from . import job_worker  # noqa: F401


def _child(sock: socket.socket) -> None:
    from . import job_worker
    from .job_messages import Started, send

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    conn = Connection(sock.detach())
    try:
        send(conn, Started(pid=os.getpid()))
        job_worker.main(conn)
    finally:
        os._exit(0)


def serve(address: str) -> None:
    _preload()
    # Move everything imported so far out of the collector's reach: a child's first collections would otherwise
    # walk (and so copy, page by page) the whole inherited heap, ~0.25 s of CPU before a job reads its order.
    gc.freeze()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(8)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps finished children
    print("ready", flush=True)
    stdin = sys.stdin.fileno()
    try:
        while True:
            ready, _, _ = select.select([server, stdin], [], [])
            if stdin in ready and not os.read(stdin, 1024):
                return  # the app's server went away
            if server in ready:
                sock, _ = server.accept()
                if os.fork() == 0:
                    server.close()
                    os.close(stdin)
                    _child(sock)
                sock.close()
    finally:
        server.close()
        with contextlib.suppress(OSError):
            os.unlink(address)
            os.rmdir(os.path.dirname(address))  # the private directory job_launch.ForkServer made for the socket


if __name__ == "__main__":
    serve(sys.argv[1])
