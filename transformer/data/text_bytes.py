"""Bytes a user brings (a file, standard input, an upload) as one text: gzip unpacked, UTF-8 decoded, or one line
that says why not."""
from __future__ import annotations

import gzip

from .corpus_files import DataError

GZIP_MAGIC = b"\x1f\x8b"


def text_from_bytes(data: bytes, where: str) -> str:
    """`data` as text: gunzipped when it is gzip, then UTF-8 (a byte-order mark dropped); DataError when it is not
    (`where` names it in the message)."""
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise DataError(f"{where} is not a readable gzip file ({exc}).") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{where} is not UTF-8 text (byte {exc.start:,} is 0x{data[exc.start]:02x}); save it as "
                        "UTF-8 and try again.") from None
