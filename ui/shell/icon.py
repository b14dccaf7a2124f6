"""The studio's page icon, drawn here: a small attention map (a bright diagonal on pale cells), so no page asks a
font server for an icon (a material or emoji icon is fetched from fonts.gstatic.com, which an offline room cannot
reach)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image

CELLS, CELL_PX = 4, 8
PALE, BRIGHT, EDGE = (219, 234, 254), (29, 78, 216), (255, 255, 255)


@lru_cache(maxsize=1)
def page_icon() -> Image.Image:
    """A 32x32 RGB image: a 4x4 grid of cells, the diagonal dark blue, the rest pale, white lines between cells."""
    size = CELLS * CELL_PX
    image = np.empty((size, size, 3), dtype=np.uint8)
    for row in range(CELLS):
        for col in range(CELLS):
            colour = BRIGHT if row == col else PALE
            image[row * CELL_PX:(row + 1) * CELL_PX, col * CELL_PX:(col + 1) * CELL_PX] = colour
    image[::CELL_PX, :] = EDGE
    image[:, ::CELL_PX] = EDGE
    return Image.fromarray(image)
