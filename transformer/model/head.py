"""One attention head and its one spelling: `Head("cross", 0, 1)` is "cross:L1H2" (1-based, as the app, the CLI
and the trace show heads); links write it with a dot ("cross.L1H2"); `Head.parse` reads either."""
from __future__ import annotations

import re
from typing import NamedTuple

KIND_CODES = {"enc": "encoder_self", "dec": "decoder_self", "cross": "cross", "self": "self"}  # every family's kinds
_CODES = {kind: code for code, kind in KIND_CODES.items()}
MEAN_HEAD = -1  # wherever a head number is stored (frames, chart data, scores), head -1 is the mean over heads
_LABEL = re.compile(r"^\s*(enc|dec|cross|self)\s*[:.\s]\s*L(\d{1,4})\s*H(\d{1,4})\s*$", re.IGNORECASE)


def head_label(head: int | None, layer: int | None = None, *, sep: str = " ", spelled: bool = False) -> str:
    """'H2' for 0-based head 1 and 'mean' for the mean of heads (None or MEAN_HEAD); with a 0-based layer,
    'L1 H2' (or 'L1H2' with sep=""). Spelled out for prose and pickers: 'Head 2', 'Mean of heads', 'Layer 1 Head 2'.
    A head of a kind is `Head.label` ('cross:L1H2'), made with this."""
    if head is None or head == MEAN_HEAD:
        name = "Mean of heads" if spelled else "mean"
    else:
        name = f"Head {head + 1}" if spelled else f"H{head + 1}"
    if spelled:
        return name if layer is None else f"Layer {layer + 1}{sep}{name}"
    return name if layer is None else f"L{layer + 1}{sep}{name}"


class HeadError(ValueError):
    """A head that the model does not have, or a head label that cannot be read."""


class Head(NamedTuple):
    """One attention head: kind ("encoder_self", "decoder_self", "cross", "self"), 0-based layer and head. A tuple,
    so it unpacks as (kind, layer, head) and equals that triple."""

    kind: str
    layer: int
    head: int

    @property
    def label(self) -> str:
        """'cross:L1H2' for (cross, layer 0, head 1): 1-based, the form the CLI and the app read back."""
        return self.format()

    def format(self, sep: str = ":") -> str:
        """The label with `sep` between kind and layer ("." in links)."""
        return f"{_CODES[self.kind]}{sep}{head_label(self.head, self.layer, sep='')}"

    @classmethod
    def parse(cls, text: str) -> "Head":
        """A head from its label ('cross:L1H2', 'enc.L2H1', 'dec L1H4'; 1-based); HeadError saying the form. Only the
        form is checked: L0 reads as layer -1, which a model's check (or a link's) refuses with its own ranges."""
        match = _LABEL.match(text or "")
        if match is None:
            raise HeadError(f"cannot read head {(text or '')[:40]!r}: write KIND:LnHm with KIND enc, dec, cross or "
                            "self (e.g. cross:L1H2; self for a decoder-only model)")
        return cls(KIND_CODES[match[1].lower()], int(match[2]) - 1, int(match[3]) - 1)
