"""One self-contained HTML file that replays a decode step by step, offline: Vega inlined, no request anywhere.

The page holds the app's own chart specs (`attention_heatmap`, `topk_bars`, `source_strip`, `decoder_row_chart`)
with their data left out, and the weights once, as integers in thousandths; its script builds each view's rows
from those and swaps them into the drawn charts, so stepping never re-renders a spec. Everything that came from
the user (model name, sentence, tokens) travels inside a `type="application/json"` block with `<`, `>`, `&` and
U+2028/9 escaped, and is put on the page as text, never as markup.

A decode whose attention is kept as a store (a document: the dense replay would hold n x n weights) is replayed in the
same template's document mode: for the layer shown, each head's overview of the whole input (the max of each cell,
from the streamed summaries), the region shown with its weights recomputed exactly from the store (every head; a region
wider than TILE_SIDE cells a side is kept as the max of each cell), and each decode step's row over every key
(max-pooled to STRIP_BINS bins) with its top keys named.
"""
from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import Any, Sequence

import altair as alt
import torch

from ..analysis import STRIP_BINS, TILE_SIDE, LayerSummaries, attention_source, pool_row, pool_tile, summarise_layer
from ..decode import ALL_TITLES as KIND_TITLES  # every family's kinds
from ..decode import BeamTree, DecodeResult
from .attention import attention_heatmap
from .beam import beam_tree_chart
from .replay_bundle import MAX_REPLAY_BYTES, WEIGHT_SCALE, ReplayTooLargeError, script_json, vega_bundle
from .replay_bundle import replay_steps as _steps
from .step import decoder_row_chart, source_strip, topk_bars
from .style import visible_token

MAX_REPLAY_STEPS = 512
REGION_SIDE = 256  # a document's replay region by default: the last rows by the last keys (as the app opens)
OVERVIEW_CELLS = 96  # a document's overview: its cells a side (as the app's document view)
TOP_KEYS = 5  # a document's step rows: the top keys named
SOURCE_CHARS = 2000  # a document's input shown in the page's header (the page holds every token anyway)
ReplayRegion = tuple[int, int, int, int]  # first row, end row, first key, end key (ends excluded)
_BUNDLE_BYTES = 900_000  # about what vega_bundle() holds (Vega, Vega-Lite and vega-embed)
_PAGE = Path(__file__).with_name("replay_page.html")


def replay_kinds(result: DecodeResult) -> list[str]:
    """The attention kinds the trace holds (a model without an encoder has no encoder self-attention)."""
    trace = result.trace
    return [k for k in trace.kinds if trace.n_layers(k) > 0 and min(trace.axis_sizes(k)) > 0]


def _check_size(result: DecodeResult, kinds: Sequence[str], bundle_bytes: int | None = None) -> None:
    n_steps = len(result.steps)
    if n_steps > MAX_REPLAY_STEPS:
        raise ReplayTooLargeError(f"This decode has {n_steps:,} steps; a replay file holds at most "
                                  f"{MAX_REPLAY_STEPS} steps. Decode fewer tokens (e.g. --max-steps "
                                  f"{MAX_REPLAY_STEPS}).")
    causal = result.trace.family.causal
    values = sum(math.prod(result.trace.shape(k)) // (2 if causal(k) else 1) for k in kinds)  # no map made
    bundle = len(vega_bundle()) if bundle_bytes is None else bundle_bytes
    estimate = bundle + 3 * values  # a stored weight takes at least "0," (most take more)
    if estimate > MAX_REPLAY_BYTES:
        raise _too_big(estimate)


def check_replay_size(result: DecodeResult) -> None:
    """Raise ReplayTooLargeError, naming the limit, when `result` is too long or too big for one replay file (cheap:
    no page is built, and the Vega code, ~5 s to load cold, is counted by its usual size)."""
    _check_size(result, replay_kinds(result), bundle_bytes=_BUNDLE_BYTES)


def _too_big(size: int, advice: str = "Use a shorter sentence or fewer steps.") -> ReplayTooLargeError:
    return ReplayTooLargeError(f"This replay would take at least {size / 1e6:.1f} MB; a replay file holds at most "
                               f"{MAX_REPLAY_BYTES / 1e6:g} MB. {advice}")


def _thousandths(weights: torch.Tensor, causal: bool) -> list[list[list[int]]]:
    """(layers, heads, Q, K) weights as [layer][head] flat row-major integer thousandths; causal: the lower
    triangle only (row q holds keys 0..q; the rest is masked)."""
    ints = (weights.detach().float().cpu() * WEIGHT_SCALE).round().to(torch.int32)  # (L, H, Q, K)
    if causal:
        q = ints.shape[-1]
        rows, cols = torch.tril_indices(q, q)
        ints = ints[..., rows, cols]  # (L, H, Q(Q+1)/2)
    return ints.flatten(2).tolist()


def _named_data(spec: dict, names: Sequence[str]) -> dict:
    """`spec` with its datasets renamed, in order of appearance (top level, then each layer), and emptied: the
    page's script fills them."""
    found: list[str] = []
    for part in [spec, *spec.get("layer", [])]:
        name = (part.get("data") or {}).get("name")
        if name and name not in found:
            found.append(name)
    if len(found) != len(names):
        raise ValueError(f"the chart has {len(found)} dataset(s), expected {len(names)}")
    renamed = dict(zip(found, names, strict=True))
    for part in [spec, *spec.get("layer", [])]:
        if "data" in part:
            part["data"] = {"name": renamed[part["data"]["name"]]}
    spec["datasets"] = {name: [] for name in names}
    return spec


def _template(chart: alt.TopLevelMixin) -> list[dict]:
    """The rows a strip chart drew (its layout: pixel boxes per token), for the page to reweight."""
    spec = chart.to_dict()
    rows = next(iter(spec["datasets"].values()))
    return [{k: v for k, v in row.items() if k not in ("weight", "weight_text")} for row in rows]


def _kind_block(result: DecodeResult, kind: str) -> dict[str, Any]:
    trace = result.trace
    q_tokens, k_tokens = trace.labels(kind)
    spec = trace.family
    stepped = kind != spec.encoder_kind  # queries are the decoder inputs: rows appear step by step
    offset = trace.step_offset if stepped else 0  # the row of step 1 (a decoder-only prompt's last token)
    chart = attention_heatmap(trace, kind, 0, None, title="", size=420,
                              max_row=offset if stepped else None, highlight_row=offset if stepped else None)
    return {"kind": kind, "title": KIND_TITLES[kind], "layers": trace.n_layers(kind), "heads": trace.n_heads,
            "stepped": stepped, "causal": spec.causal(kind), "offset": offset,
            "queries": [visible_token(t) for t in q_tokens], "keys": [visible_token(t) for t in k_tokens],
            "weights": _thousandths(trace.weights(kind), spec.causal(kind)),
            "spec": _named_data(chart.to_dict(), ["heat", "row"] if stepped else ["heat"])}


def _ints(weights: torch.Tensor) -> list:
    return (weights.detach().float().cpu() * WEIGHT_SCALE).round().to(torch.int32).tolist()


def check_region(n_rows: int, n_keys: int, region: ReplayRegion) -> None:
    """Raise ValueError (one line) for a region (first row, end row, first key, end key) outside the input."""
    r0, r1, k0, k1 = region
    if not (0 <= r0 < r1 <= n_rows and 0 <= k0 < k1 <= n_keys):
        raise ValueError(f"the region rows {r0:,}–{r1:,} × keys {k0:,}–{k1:,} is outside the input (rows 0–{n_rows:,}, "
                         f"keys 0–{n_keys:,})")


def document_replay_size(n_heads: int, n_steps: int, n_tokens: int, region: ReplayRegion) -> int:
    """Bytes a document's replay page takes at least (a stored weight takes at least "0,"): the Vega code, the
    overviews, the region, the step strips, the tokens."""
    r0, r1, k0, k1 = region
    cells = (min(r1 - r0, TILE_SIDE) * min(k1 - k0, TILE_SIDE) + OVERVIEW_CELLS ** 2
             + n_steps * min(n_tokens, STRIP_BINS))
    return 900_000 + 2 * n_heads * cells + 4 * n_tokens


def _document_data(result: DecodeResult, model_name: str, *, layer: int, region: ReplayRegion,
                   weights: str = "", summaries: LayerSummaries | None = None) -> dict[str, Any]:
    """Everything the document mode draws (see the module's docstring); `region` is (first row, end row, first
    key, end key) of the zoom shown, `summaries` the layer's (computed here when not given)."""
    source = attention_source(result.trace)  # a document's store (or a short input's maps: the same numbers)
    n_layers, n_heads, n_rows, n_keys = source.shape("self")
    if not 0 <= layer < n_layers:
        raise IndexError(f"self has {n_layers} layer(s); layer {layer} does not exist")
    check_region(n_rows, n_keys, region)
    size = document_replay_size(n_heads, len(result.steps), n_keys, region)
    if size > MAX_REPLAY_BYTES:
        raise ReplayTooLargeError(f"This replay would take at least {size / 1e6:.1f} MB; a replay file holds at most "
                                  f"{MAX_REPLAY_BYTES / 1e6:g} MB. Zoom to a smaller region.")
    if summaries is None:
        summaries = summarise_layer(source, "self", layer, resolution=OVERVIEW_CELLS)
    heads = torch.arange(n_heads)
    r0, r1, k0, k1 = region
    tile, rb, kb = pool_tile(source.block("self", layer, heads, torch.arange(r0, r1), torch.arange(k0, k1))[0],
                             TILE_SIDE)
    offset = result.trace.step_offset
    step_rows = torch.arange(offset, min(offset + len(result.steps), n_rows))
    rows = source.block("self", layer, heads, step_rows, torch.arange(n_keys))[0]  # (H, steps, K): a row per step
    strips = pool_row(rows)  # (H, steps, bins)
    bins = strips.shape[-1]
    top = rows.topk(min(TOP_KEYS, n_keys), dim=-1)
    grid = summaries.overview
    text = result.source_text
    return {
        "model": model_name, "weights": weights, "output": result.output_text, "finished": result.finished,
        "source": text[:SOURCE_CHARS] + ("…" if len(text) > SOURCE_CHARS else ""),
        "steps": _steps(result), "layer": layer, "layers": n_layers, "heads": n_heads,
        "rows": n_rows, "keys": n_keys, "offset": offset,
        "tokens": [visible_token(t) for t in result.trace.decoder_input_tokens],
        "overview": {"row_cell": -(-n_rows // grid.shape[1]), "key_cell": -(-n_keys // grid.shape[2]),
                     "values": _ints(grid)},
        "region": {"r0": r0, "r1": r1, "k0": k0, "k1": k1, "row_cell": rb, "key_cell": kb, "values": _ints(tile)},
        "strips": {"bin": n_keys / bins, "values": _ints(strips.transpose(0, 1))},  # [step][head][bin]
        "top": [[[[int(k), round(float(w), 4)] for w, k in zip(top.values[h, s], top.indices[h, s], strict=True)]
                 for h in range(n_heads)] for s in range(len(step_rows))],
    }


def replay_data(result: DecodeResult, model_name: str, weights: str = "", beam: BeamTree | None = None, *,
                layer: int = 0, region: ReplayRegion | None = None, summaries: LayerSummaries | None = None
                ) -> dict[str, Any]:
    """Everything the replay page draws, as plain JSON-ready data (see `replay_html`); with `beam`, the beam tree
    (its final hypotheses and the tree chart). A decode kept as a store: its document mode (`layer`, `region`,
    `summaries`, as `replay_html` says), which holds an `overview`."""
    source = attention_source(result.trace)
    if not source.holds_maps:
        if region is None:
            _, _, rows, keys = source.shape("self")
            side = min(REGION_SIDE, rows, keys)
            region = (rows - side, rows, keys - side, keys)
        return _document_data(result, model_name, layer=layer, region=region, weights=weights, summaries=summaries)
    kinds = replay_kinds(result)
    if not kinds:
        raise ValueError("the trace holds no attention to replay")
    if not result.steps:
        raise ValueError("the decode has no step to replay")
    _check_size(result, kinds)
    trace = result.trace
    widest = max(result.steps, key=lambda s: len(s.top_k))
    data: dict[str, Any] = {
        "model": model_name, "weights": weights, "source": result.source_text, "output": result.output_text,
        "mode": result.mode, "finished": result.finished, "steps": _steps(result),
        "output_tokens": [visible_token(t) for t in result.output_tokens],
        "kinds": [_kind_block(result, k) for k in kinds],
        "topk_spec": _named_data(topk_bars(widest.top_k, widest.token, width=260).to_dict(), ["topk"]),
    }
    spec = trace.family
    if spec.cross_kind in kinds:
        strip = source_strip(trace.source_tokens, [0.0] * len(trace.source_tokens), max_width=900)
        data["source_strip"] = {"spec": _named_data(strip.to_dict(), ["strip"]), "rows": _template(strip)}
    if spec.decoder_kind in kinds:
        tokens = trace.decoder_input_tokens
        strip = decoder_row_chart(tokens, [0.0] * len(tokens), max_width=560)
        data["prefix_strip"] = {"spec": _named_data(strip.to_dict(), ["strip"]), "rows": _template(strip)}
    if beam is not None:
        data["beam"] = {"width": beam.width, "spec": beam_tree_chart(beam, max_width=900).to_dict(),
                        "hypotheses": [{"text": h.text, "score": round(h.score, 4), "log_prob": round(h.log_prob, 4),
                                        "finished": h.finished} for h in beam.hypotheses]}
    return data


def replay_html(result: DecodeResult, model_name: str, weights: str = "", beam: BeamTree | None = None, *,
                layer: int = 0, region: ReplayRegion | None = None, summaries: LayerSummaries | None = None) -> str:
    """One self-contained HTML page replaying `result` step by step (Next/Prev and the arrow keys, every attention
    kind the trace has, layer and head pickers and the mean of heads, the top-k of each step), offline.

    `model_name` and `weights` (which weights these are, e.g. "Weights of step 6,684") are shown in its header.
    Raises ReplayTooLargeError over MAX_REPLAY_STEPS steps or MAX_REPLAY_BYTES bytes. A decode whose attention is
    kept as a store (a document) is replayed in the template's document mode: `layer`'s overview of each head,
    `region` (first row, end row, first key, end key; by default the last REGION_SIDE rows by the last REGION_SIDE
    keys) with its exact weights, and each step's row over every key; ValueError for a region outside the input.
    """
    data = replay_data(result, model_name, weights, beam, layer=layer, region=region, summaries=summaries)
    document = "overview" in data
    shown = f"{len(data['tokens']):,} tokens" if document else result.source_text
    title = f"Replay · {model_name} · {shown}"
    parts = {"title": html.escape(visible_token(title[:200])), "data": script_json(data), "vega": vega_bundle()}
    page = re.sub(r"\{\{(title|data|vega)\}\}", lambda m: parts[m.group(1)], _PAGE.read_text(encoding="utf-8"))
    size = len(page.encode("utf-8"))
    if size > MAX_REPLAY_BYTES:
        raise _too_big(size, "Zoom to a smaller region." if document else "Use a shorter sentence or fewer steps.")
    return page
