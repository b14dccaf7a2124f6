"""mT5: T5's layout (its output is never rescaled: `scale_decoder_outputs` is false in its config)."""
from __future__ import annotations

from .t5 import t5_like

ARCHITECTURE = t5_like("mt5")
