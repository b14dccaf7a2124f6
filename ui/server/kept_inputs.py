"""Long inputs kept on the server under their hash: a link to a document carries `doc=HASH` and the view, never the
text; the text is written once (gzip) under `inputs_root()` and read back by whoever opens the link."""
from __future__ import annotations

import gzip
import hashlib
import os
import re
import tempfile

from .settings import inputs_root

DOC_PARAM = "doc"
DOC_STATE_KEY = "studio_document_hash"  # session state: the hash of the document whose decode the page shows
_HASH = re.compile(r"[0-9a-f]{32}")


def text_hash(text: str) -> str:
    """The hash a document's link carries (32 hex digits of its UTF-8 bytes' SHA-256)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def keep_text(text: str) -> str:
    """Keep `text` on the server (once, atomically) and return its hash."""
    digest = text_hash(text)
    folder = inputs_root()
    path = folder / f"{digest}.txt.gz"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".part")
        with os.fdopen(fd, "wb") as f:
            f.write(gzip.compress(text.encode("utf-8")))
        os.replace(tmp, path)
    return digest


def kept_text(digest: str) -> str | None:
    """The document kept under `digest`, or None (not a hash, or not on this server: e.g. it was cleared)."""
    if not isinstance(digest, str) or not _HASH.fullmatch(digest):
        return None
    path = inputs_root() / f"{digest}.txt.gz"
    if not path.is_file():
        return None
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    return text if text_hash(text) == digest else None
