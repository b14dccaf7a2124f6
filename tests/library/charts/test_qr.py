"""QR codes of share links: the code read back is exactly the link."""
from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

from transformer.charts import qr_matrix, qr_png, qr_svg

LINK = ("http://localhost:8501/decode?model=multi30k-en-de&text=A+man+%C3%BCber+die+Br%C3%BCcke%21&step=3"
        "&layer=1&head=mean#view")
QUIET = 4  # modules of white border around the code


def png_modules(png: bytes, scale: int) -> list[list[int]]:
    """The modules of a QR PNG (1 dark), read at each module's centre, the quiet zone left out."""
    image = Image.open(io.BytesIO(png)).convert("L")
    n = image.width // scale - 2 * QUIET
    return [[int(image.getpixel(((QUIET + c) * scale + scale // 2, (QUIET + r) * scale + scale // 2)) < 128)
             for c in range(n)] for r in range(n)]


def test_the_png_holds_exactly_the_codes_modules():
    import segno

    png = qr_png(LINK, scale=6)
    expected = [[int(bool(v)) for v in row] for row in segno.make(LINK, error="m", micro=False).matrix]
    assert png_modules(png, 6) == expected == [list(row) for row in qr_matrix(LINK)]


def test_a_qr_decoder_reads_back_exactly_the_link():
    zxingcpp = pytest.importorskip("zxingcpp")
    found = zxingcpp.read_barcodes(Image.open(io.BytesIO(qr_png(LINK, scale=4))))
    assert [r.text for r in found] == [LINK]


def test_the_svg_is_a_square_drawing_of_the_same_size():
    svg = ET.fromstring(qr_svg(LINK, scale=5))
    n = len(qr_matrix(LINK)) + 2 * QUIET
    assert (svg.get("width"), svg.get("height")) == (str(5 * n), str(5 * n))


@pytest.mark.parametrize("bad", ["", "x" * 5000])
def test_no_link_or_one_too_long_is_refused(bad):
    with pytest.raises(ValueError, match="link"):
        qr_png(bad)
