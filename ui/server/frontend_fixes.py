"""Fixes to Streamlit's own frontend, applied to its JavaScript chunks as `StaticFromMemory` serves them.

**A text box's first paint holds its value.** Streamlit's text input and text area (1.67) keep what the box shows in a
state of their own that starts from the browser's widget manager, which a fresh session has not filled yet: the box
mounts empty and takes its value from the server one React effect later, after the first paint (0.1–1 s later on a
busy page: a shared link's text box drew empty, then filled, while its charts were drawn in the same run). The fix
starts that state from the value the widget already holds (the server's value when it set one, else its default),
which the effect then finds equal. Each fix names the chunk (the file name's stem), the exact text it replaces and
what replaces it; a Streamlit whose chunk lacks that text is served unchanged (`pending_fixes` names such fixes, and a
test checks that none is pending on the pinned Streamlit).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ChunkFix:
    """One replacement in one of Streamlit's chunks: `old` (found exactly once) becomes `new`."""

    stem: str  # the file name before its hash: "TextInput" for TextInput.MPWivlu9.js
    old: bytes
    new: bytes

    def applies_to(self, name: str) -> bool:
        """Whether `name` (a file name in static/js) is this fix's chunk."""
        return name.startswith(self.stem + ".") and name.endswith(".js") and name.count(".") == self.stem.count(".") + 2


FIXES = (
    # the text input's shown value (`u`) started from the widget manager alone: null on a fresh page
    ChunkFix("TextInput", b"useState)(()=>y(i,t)??null)",
             b"useState)(()=>y(i,t)??(t.setValue?t.value:t.default)??null)"),
    # the text area's (`z`): the same
    ChunkFix("TextArea", b"return e===void 0?C(i,t)??null:e})",
             b"return e===void 0?C(i,t)??(t.setValue?t.value:t.default)??null:e})"),
)


def fixed(name: str, body: bytes) -> bytes:
    """`body` of the chunk `name` with the fixes that apply to it (each only where its text occurs exactly once)."""
    for fix in FIXES:
        if fix.applies_to(name) and body.count(fix.old) == 1:
            body = body.replace(fix.old, fix.new)
    return body


def pending_fixes(js_dir: Path) -> list[str]:
    """The fixes that do not apply to the chunks in `js_dir` (no chunk of that stem, or its text not found once)."""
    pending = []
    for fix in FIXES:
        chunks = [p for p in js_dir.glob("*.js") if fix.applies_to(p.name)]
        if len(chunks) != 1 or chunks[0].read_bytes().count(fix.old) != 1:
            pending.append(fix.stem)
    return pending
