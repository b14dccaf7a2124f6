"""Charts as HTML that draws with no network, for notebooks: Vega, Vega-Lite and vega-embed travel with the chart.

Altair's own offline HTML (`template="inline"`) is a whole page whose scripts declare top-level names (`const
spec`, the bundle's own); a notebook puts every output into one document, so from the second chart on those
scripts stop at "Identifier has already been declared" and the chart stays blank. Here every chart is a fragment:
its div and one script that leaves two global names (`attentionStudioVega`, `attentionStudioVegaEmbed`). The
libraries (vl-convert's bundle, so the versions Altair's specs are written for) travel gzip'd and base64'd with
every chart, ~0.4 MB instead of ~0.9 MB, so each output draws on its own (cells run in any order, outputs cleared,
a saved notebook opened without a kernel); on a page the first chart that runs unpacks them, the others reuse them.
"""
from __future__ import annotations

import base64
import gzip
import json
import re
import uuid
from functools import lru_cache
from typing import Any

import altair as alt

from .replay import script_json

INLINE_RENDERER = "attention-studio-inline"
VEGA_GLOBAL = "attentionStudioVega"  # the page's one global: a promise of vega-embed's embed function
_VL_VERSION = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
_DIV = "attention-studio-chart-"  # + a uuid: each chart's own div

_LOADER = """<div id="%(div)s"></div>
<script type="text/javascript">
(function (div, spec, embedOptions, packed) {
  const before = document.currentScript && document.currentScript.previousElementSibling;
  const target = before && before.id === div ? before : document.getElementById(div);
  // Vega, Vega-Lite and vega-embed travel with the chart (gzip, base64): unpacked once per page, no network
  if (!window.%(global)s) {
    const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
    const unzipped = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    window.%(global)s = new Response(unzipped).text().then((code) => {
      const script = document.createElement("script");
      script.textContent = code;  // sets window.%(global)sEmbed
      document.head.appendChild(script);
      return window.%(global)sEmbed;
    });
  }
  window.%(global)s
    .then((embed) => embed(target, spec, embedOptions))
    .catch((error) => { target.textContent = "This chart could not be drawn: " + error; console.error(error); });
})("%(div)s", %(spec)s, %(options)s, "%(packed)s");
</script>"""
_CALL = re.compile(rf'\}}\)\("{_DIV}[0-9a-f]+", (?P<args>.*), "(?P<packed>[A-Za-z0-9+/=]+)"\);\s*</script>$', re.DOTALL)


@lru_cache(maxsize=1)
def packed_vega_bundle() -> str:
    """vl-convert's bundle of Vega, Vega-Lite and vega-embed, setting only `window.attentionStudioVegaEmbed`, as
    base64 of its gzip (~0.4 MB; built once per process, ~2 s)."""
    import vl_convert

    code = vl_convert.javascript_bundle(snippet=f"window.{VEGA_GLOBAL}Embed = vegaEmbed;", vl_version=_VL_VERSION)
    return base64.b64encode(gzip.compress(code.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def read_inline_chart(html: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """What an `inline_chart_html` fragment (a saved notebook output) carries: the spec, vega-embed's options and
    the JavaScript of the libraries. ValueError for other HTML."""
    call = _CALL.search(html)
    if call is None:
        raise ValueError("not a chart written by inline_chart_html")
    decoder = json.JSONDecoder()
    spec, end = decoder.raw_decode(call["args"])
    options, _ = decoder.raw_decode(call["args"], end + len(", "))
    return spec, options, gzip.decompress(base64.b64decode(call["packed"])).decode("utf-8")


def inline_chart_html(spec: dict[str, Any], *, embed_options: dict[str, Any] | None = None) -> str:
    """A Vega-Lite spec as an HTML fragment that draws offline, alone or beside other such charts on a page."""
    options = {"mode": "vega-lite", **(embed_options or {})}
    return _LOADER % {"div": f"{_DIV}{uuid.uuid4().hex}", "global": VEGA_GLOBAL,
                      "spec": script_json(spec), "options": script_json(options), "packed": packed_vega_bundle()}


def inline_renderer(spec: dict[str, Any], **metadata: Any) -> dict[str, str]:
    """Altair renderer: the chart as `inline_chart_html` (metadata's `embed_options` are passed to vega-embed)."""
    return {"text/html": inline_chart_html(spec, embed_options=metadata.get("embed_options"))}


def enable_inline_renderer(*, replace_chosen: bool = False) -> bool:
    """Register the inline renderer with Altair and enable it, unless a renderer other than Altair's default was
    chosen already (then `replace_chosen=True` enables it anyway). Returns whether it is the active one."""
    alt.renderers.register(INLINE_RENDERER, inline_renderer)
    if replace_chosen or alt.renderers.active in ("default", INLINE_RENDERER):
        alt.renderers.enable(INLINE_RENDERER)
    return alt.renderers.active == INLINE_RENDERER
