"""Checkpoint bundles: a checkpoint directory as one .zip, for download and upload.

A bundle holds the checkpoint files at the zip root or inside one top-level folder. Uploads are untrusted:
only the known checkpoint file names are extracted, into a fresh private directory, with size limits.
"""
from __future__ import annotations

import io
import os
import shutil
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from .checkpoint import Checkpoint, CheckpointError, is_valid_run_name, load_checkpoint
from .checkpoint_format import CHECKPOINT_FILES, CONFIG, MODEL

MAX_BUNDLE_BYTES = 50 * 2**20  # compressed upload
MAX_UNPACKED_BYTES = 200 * 2**20
MAX_RATIO = 200  # uncompressed / compressed, for entries over RATIO_CHECK_BYTES
RATIO_CHECK_BYTES = 2**20
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # identical checkpoints give identical bundles


def bundle_bytes(path: str | Path) -> bytes:
    """A .zip of the checkpoint directory `path`, its files inside a folder named like the directory."""
    folder = Path(path)
    if not (folder / CONFIG).is_file() or not (folder / MODEL).is_file():
        raise CheckpointError(f"{folder}: not a checkpoint directory (config.json or model.safetensors missing)")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in CHECKPOINT_FILES:
            if (folder / name).is_file():
                info = zipfile.ZipInfo(f"{folder.name}/{name}", date_time=_FIXED_DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, (folder / name).read_bytes())
    return buffer.getvalue()


def _is_macos_junk(name: str) -> bool:
    """Entries macOS Finder adds when zipping a folder; skipped, never extracted."""
    return name.startswith("__MACOSX/") or PurePosixPath(name).name == ".DS_Store"


def _check_entry(info: zipfile.ZipInfo) -> tuple[str, ...]:
    """Path parts of a safe entry name; raises CheckpointError for anything that could escape or surprise."""
    name = info.filename
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":") or "\x00" in name:
        raise CheckpointError(f"bundle entry {name!r} has an absolute or non-portable path")
    parts = tuple(p for p in name.split("/") if p)
    if any(p in (".", "..") for p in parts):
        raise CheckpointError(f"bundle entry {name!r} points outside the bundle ('..')")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise CheckpointError(f"bundle entry {name!r} is a symbolic link")
    if info.flag_bits & 0x1:
        raise CheckpointError(f"bundle entry {name!r} is encrypted")
    return parts


def _plan(zf: zipfile.ZipFile) -> tuple[str, dict[str, zipfile.ZipInfo]]:
    """The folder name (or "") and the entries to extract, keyed by checkpoint file name; validates all."""
    files: dict[str, zipfile.ZipInfo] = {}
    folders: set[str] = set()
    seen: set[str] = set()
    for info in zf.infolist():
        if info.filename in seen:
            raise CheckpointError(f"bundle holds {info.filename!r} twice")
        seen.add(info.filename)
        parts = _check_entry(info)
        if _is_macos_junk(info.filename) or not parts:
            continue
        if info.is_dir():
            if len(parts) > 1:
                raise CheckpointError(f"bundle has nested folder {info.filename!r}; expected the checkpoint "
                                      f"files at the top or in one folder")
            folders.add(parts[0])
            continue
        if len(parts) > 2 or parts[-1] not in CHECKPOINT_FILES:
            raise CheckpointError(f"bundle entry {info.filename!r} is not a checkpoint file "
                                  f"(expected only {', '.join(CHECKPOINT_FILES)})")
        folders.add(parts[0] if len(parts) == 2 else "")
        if parts[-1] in files:
            raise CheckpointError(f"bundle holds {parts[-1]} twice")
        files[parts[-1]] = info
    if len(folders) > 1:
        raise CheckpointError("bundle mixes several folders; expected the checkpoint files at the top or in one folder")
    if not files:
        raise CheckpointError("bundle holds no checkpoint files")
    declared = sum(info.file_size for info in files.values())
    if declared > MAX_UNPACKED_BYTES:
        raise CheckpointError(f"bundle unpacks to {declared / 2**20:.0f} MiB; the limit is "
                              f"{MAX_UNPACKED_BYTES / 2**20:.0f} MiB")
    for name, info in files.items():
        if info.file_size > RATIO_CHECK_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise CheckpointError(f"bundle entry {name} is compressed suspiciously well (a zip bomb?)")
    return (folders.pop() if folders else ""), files


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, budget: int) -> int:
    """Copy one entry to `target`, stopping past its declared size or the remaining budget; bytes written."""
    limit = min(info.file_size, budget)
    written = 0
    with zf.open(info) as src, open(target, "xb") as dst:
        while chunk := src.read(2**20):
            written += len(chunk)
            if written > limit:
                raise CheckpointError(f"bundle entry {info.filename!r} unpacks to more than it declares")
            dst.write(chunk)
    return written


def load_bundle(data: bytes, workdir: str | Path) -> Checkpoint:
    """Unpack an uploaded bundle into a new private directory under `workdir` and load it (validated).

    The returned checkpoint's `path` is that directory; the caller owns `workdir` and its clean-up.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("load_bundle expects the uploaded bytes")
    if len(data) > MAX_BUNDLE_BYTES:
        raise CheckpointError(f"the bundle is {len(data) / 2**20:.1f} MiB; the limit is "
                              f"{MAX_BUNDLE_BYTES / 2**20:.0f} MiB")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        raise CheckpointError("the upload is not a .zip bundle of a checkpoint") from None
    with zf:
        folder, files = _plan(zf)
        name = folder if folder and is_valid_run_name(folder) is None else "uploaded"
        Path(workdir).mkdir(parents=True, exist_ok=True)
        private = Path(tempfile.mkdtemp(prefix="bundle-", dir=workdir))
        try:
            target = private / name
            target.mkdir()
            budget = MAX_UNPACKED_BYTES
            for file_name, info in files.items():
                budget -= _extract(zf, info, target / file_name, budget)
            return load_checkpoint(target)
        except CheckpointError as exc:
            shutil.rmtree(private, ignore_errors=True)
            raise CheckpointError(f"in the bundle: {str(exc).replace(f'{target}{os.sep}', '')}") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
            shutil.rmtree(private, ignore_errors=True)
            raise CheckpointError(f"the bundle is damaged and cannot be unpacked ({exc})") from None
        except BaseException:
            shutil.rmtree(private, ignore_errors=True)
            raise
