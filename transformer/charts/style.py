"""What every chart shares: colours, the head numbering, visible tokens and a text-width estimate (no plotting).

Conventions: rows are queries (y axis), columns are keys (x axis); positions are 0-based in data and 1-based in
labels ("L1 H1"); wherever a head number is stored, the mean over heads is head -1 (`MEAN_HEAD`). Tokens are
shown in a visible form (a space is "␣"); data frames for export keep the raw tokens.
This module imports no plotting library.
"""
from __future__ import annotations

import unicodedata

# ColorBrewer Blues: white at 0, so a weight of 0 reads as "nothing" (Vega's "blues" scheme starts light blue).
BLUES = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
# ColorBrewer RdBu, reversed: red below 0, white at 0, blue above (a correlation's sign stays visible).
DIVERGING = ("#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3", "#2166ac")
MASKED_COLOR = "#d4d4d4"
NOT_REACHED_COLOR = "#eef1f6"  # rows a step-through has not reached yet
GOLD_COLOR = "#f28e2b"
HIGHLIGHT_COLOR = "#d62728"
BAR_COLOR, CHOSEN_COLOR = "#9ecae1", "#f28e2b"
LINE_COLORS = {"loss": "#1f77b4", "accuracy": "#2ca02c", "valid_loss": "#d62728", "valid_accuracy": "#ff7f0e",
               "exact_match": "#9467bd"}
# width/height are the plotting area (Streamlit's default "fit" would squeeze axes and titles into them).
AUTOSIZE = {"type": "pad", "contains": "padding"}
PLAIN_AXIS = dict(ticks=False, domain=False, labelPadding=4, titleFontWeight="normal", titleColor="#555")

_VISIBLE = {" ": "␣", "\t": "⇥", "\n": "⏎", "": "∅"}
_INVISIBLE = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # controls, format (e.g. right-to-left override), surrogates
# Advance widths of a Helvetica-like sans-serif, in em; other characters count as 0.56 em (wide East Asian as 1).
_NARROW = dict.fromkeys("ijl'!|.,:;`", 0.26) | dict.fromkeys("ftrI/()[]- ", 0.34)
_WIDE = dict.fromkeys("mw", 0.84) | dict.fromkeys("MW", 0.9) | dict.fromkeys("<>=+~#%&@", 0.6)


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet (used by BART, RoBERTa, GPT-2): character -> the byte it stands for.
    Printable Latin-1 bytes stand for themselves; the others are shifted to U+0100.. (space is "Ġ", newline "Ċ")."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + i): b for i, b in enumerate(shifted)}


_BYTE_OF = _byte_alphabet()
WORD_START = "▁"  # how a word-initial byte-level piece is shown ("Ġthe" -> "▁the"), as SentencePiece writes it


def readable_piece(token: str) -> str:
    """A byte-level BPE piece as the text it spells ("ĠwÃ¤hrend" -> " während"); any other token unchanged.

    A token is read as byte-level only when every character is in the byte alphabet, the bytes are valid UTF-8
    and the text differs, so SentencePiece pieces ("▁während") and plain words pass through. A piece that holds
    part of a character (its bytes cut mid-character) is left as it is."""
    if not token or token.isascii() or any(ch not in _BYTE_OF for ch in token):
        return token
    try:
        text = bytes(_BYTE_OF[ch] for ch in token).decode("utf-8")
    except UnicodeDecodeError:
        return token
    return text


def visible_token(token: str) -> str:
    """A token as shown to people (axes, chips, captions): byte-level BPE pieces decoded to their text with a
    leading space as "▁" (`readable_piece`), whitespace and the empty string made visible, control and
    direction-changing characters written as their code point (U+202E), never interpreted."""
    readable = readable_piece(token)
    if readable != token and readable.strip():
        stripped = readable.lstrip(" ")
        token = WORD_START * (len(readable) - len(stripped)) + stripped
    elif readable != token:  # a piece of spaces only
        token = readable if readable in _VISIBLE else readable.replace(" ", _VISIBLE[" "])
    if token in _VISIBLE:
        return _VISIBLE[token]
    return "".join("⏎" if ch == "\n" else f"U+{ord(ch):04X}" if unicodedata.category(ch) in _INVISIBLE else ch
                   for ch in token)


def text_width(text: str, font_size: float) -> float:
    """Estimated width in pixels of `text` drawn in the charts' sans-serif font (good to about 10%)."""
    em = 0.0
    for ch in text:
        if ch in _NARROW or ch in _WIDE:
            em += _NARROW.get(ch, 0.0) + _WIDE.get(ch, 0.0)
        elif unicodedata.east_asian_width(ch) in ("W", "F"):
            em += 1.0
        elif ch.isupper():
            em += 0.68
        else:
            em += 0.56
    return em * font_size


def counted(n: int, word: str) -> str:
    """'1 head', '4 heads': a count with its noun in the right number (titles a newcomer reads)."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"
