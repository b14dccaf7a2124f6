"""Crash-safe writes: fsync'd files, atomic file replacement and atomic directory replacement."""
from __future__ import annotations

import ctypes
import errno
import os
import sys
import tempfile
from pathlib import Path


def fsync_path(path: str | Path) -> None:
    """Flush a file's or directory's contents to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: str | Path, data: str | bytes) -> None:
    """Write `data` to `path` and fsync it (not atomic on its own: write into a temporary place first)."""
    with open(path, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        fh.flush()
        os.fsync(fh.fileno())


def write_file_atomic(path: str | Path, data: str | bytes) -> None:
    """Replace `path` with `data` so readers see the old file or the new one, never a partial one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write_durably(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(path.parent)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths with Linux renameat2(RENAME_EXCHANGE); False where that is unsupported."""
    libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(b))


def replace_directory(new: Path, target: Path) -> None:
    """Put directory `new` at existing `target`; afterwards `new` holds the old contents.

    An atomic swap where the system has one; otherwise two renames, so `target` is briefly absent but never
    a mix of old and new files (a crash between them leaves the old directory under a hidden name).
    """
    if _exchange(new, target):
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    os.rename(target, aside / "old")
    try:
        os.rename(new, target)
    except OSError:
        os.rename(aside / "old", target)
        aside.rmdir()
        raise
    os.rename(aside / "old", new)
    aside.rmdir()
