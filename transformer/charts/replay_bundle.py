"""What both replay pages share (a decode's replay step by step, and a document's): Vega inlined for offline use,
user text as JSON safe inside a <script> element, weights as integer thousandths, each step's token and top-k, and
the limit one file keeps to."""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import altair as alt

from ..decode import DecodeResult
from .step import topk_frame
from .style import visible_token

MAX_REPLAY_BYTES = 20_000_000  # 20 MB
WEIGHT_SCALE = 1000  # weights stored as integer thousandths (3 decimals)
_VL_VERSION = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


class ReplayTooLargeError(ValueError):
    """A decode too long (steps) or too big (bytes) for one replay file."""


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script (from vl-convert, so no CDN), safe inside a <script> element."""
    import vl_convert

    # vl-convert's stub marks the optional `snippet` as required
    bundle = vl_convert.javascript_bundle(vl_version=_VL_VERSION)  # type: ignore[call-arg]
    return re.sub(r"</(script)", r"<\\/\1", bundle, flags=re.IGNORECASE)


def script_json(data: Any) -> str:
    """JSON that can sit inside a <script> element: no `</script>`, no `<!--`, no line separators a parser trips on."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group()], text)


def replay_steps(result: DecodeResult) -> list[dict[str, Any]]:
    """Each step's fed token, chosen token, probability, forced flag and top-k, as the pages show them."""
    inputs, offset = result.trace.decoder_input_tokens, result.trace.step_offset
    return [{"input": visible_token(inputs[offset + t]) if offset + t < len(inputs) else "",
             "token": visible_token(s.token),
             "prob": round(float(s.prob), 4), "forced": bool(s.forced),
             "topk": topk_frame(s.top_k, s.token).round({"percent": 2}).to_dict("records")}
            for t, s in enumerate(result.steps)]
