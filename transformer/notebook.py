"""The studio in a Jupyter notebook: the app's charts for a model and a sentence, and the trace as data.

    from transformer.notebook import show, trace
    show("checkpoints/multi30k-en-de", "A man rides a bike.")          # the step-through, with a step slider
    show("checkpoints/multi30k-en-de", "A man rides a bike.", view="grid", kind="encoder_self")
    trace("checkpoints/multi30k-en-de", "A man rides a bike.").to_frame()  # one row per weight

`model` is one of our checkpoint folders, a Hugging Face folder (what `save_pretrained` writes, safetensors only)
or a cached hub id, as the app and the command line open them, or a model `load` returned (opened once, reused).
Charts are Altair charts: a notebook draws the one a cell returns, with no network (importing this module enables
`charts.INLINE_RENDERER`, which carries Vega in the output), and `.save("x.html", inline=True)` writes an offline
page.

Errors a user can cause raise the command line's errors, with its one-line messages and a short traceback:
`CheckpointError` or `HFModelError` (a missing path, a damaged checkpoint, a folder with pickled weights only),
`InputError` (an empty sentence, one too long for the model), `ValueError` (an unknown view or kind, a layer or
head that the model does not have); all of them are ValueErrors.
"""
from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any, Callable, TypeVar

import altair as alt
import pandas as pd

from .adapters import DEFAULT_MAX_PARAMS, HFModelError, InspectableModel, ResidualPathError
from .analysis import (
    EAP_IG,
    LOGIT_DIFF,
    SITES,
    CircuitResult,
    HeadComputation,
    HeadSelectionError,
    PatchingResult,
    capture_decode,
    computation_at,
    decode_parts,
    every_step_lens,
    find_circuit,
    lens_grid,
    pair_from_text,
    patch_sites,
    prepare_patching,
    qk_attribution,
    step_lens,
    trace_view,
    whole_maps,
)
from .analysis import contributions as _contributions
from .charts import (
    ChartTooLargeError,
    attention_grid,
    attention_map,
    contribution_heatmap,
    enable_inline_renderer,
    step_slider_chart,
)
from .decode import ALL_TITLES, KINDS, AttentionTrace, DecodeResult, InputError, Sampling, greedy_decode, masked_decode
from .model import Head
from .store import CheckpointError, open_model

# tqdm (imported by Hugging Face's libraries) asks for ipywidgets in every notebook without them; its bars are off
warnings.filterwarnings("ignore", message="IProgress not found")
# Altair's default HTML loads Vega from a CDN: offline every chart would be blank. Ours carries it (unless the user
# picked a renderer of their own before importing this module)
enable_inline_renderer()

__all__ = ["VIEWS", "circuit", "contributions", "decode", "frame", "inside", "lens", "load", "patch", "qk", "show",
           "trace"]

VIEWS = ("step", "grid", "head")
Model = str | Path | InspectableModel
_USER_ERRORS = (CheckpointError, HFModelError, InputError, ChartTooLargeError, HeadSelectionError, ResidualPathError)
_F = TypeVar("_F", bound=Callable[..., Any])


def _one_line_errors(fn: _F) -> _F:
    """A user's error leaves `fn` with its message and no frames from deep inside the library."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _USER_ERRORS as exc:
            raise exc.with_traceback(None) from None
        except (IndexError, KeyError) as exc:  # a layer, head or kind the model does not have
            raise ValueError(str(exc).strip("'\"")) from None
    return wrapper  # type: ignore[return-value]


@_one_line_errors
def load(model: Model, *, prefix: str = "", max_params: int = DEFAULT_MAX_PARAMS) -> InspectableModel:
    """The model behind a checkpoint folder, a Hugging Face folder or a cached hub id (an opened model as it is).

    `prefix` is put before every source text (T5's "translate English to German: "); `max_params` caps the size of
    a Hugging Face model. Raises CheckpointError or HFModelError.
    """
    if isinstance(model, InspectableModel):
        return model
    if not isinstance(model, (str, Path)):
        raise TypeError(f"model must be a folder, a hub id or a loaded model, not {type(model).__name__}")
    return open_model(str(model), prefix=prefix, max_params=max_params)


@_one_line_errors
def decode(model: Model, text: str, *, top_k: int = 5, max_steps: int | None = None,
           sampling: Sampling | None = None, keep: str = "auto") -> DecodeResult:
    """Greedy decoding of `text`: the output, each step's top-k candidates and the attention trace (`.trace`).
    `sampling` (`transformer.decode.Sampling(temperature, top_k, top_p, seed)`) samples instead: the same seed gives
    the same tokens as the app and `decode --temperature ... --seed S`. `keep` ("auto", "maps", "store"): what the
    trace holds, as `decode --keep`; by default a decoder-only model's prompt past `STORE_ABOVE` tokens (up to the
    model's own context, 32k tokens and more) keeps the attention store, whose maps are made only where read; its
    steps are then, unless `max_steps` says, those of the model's own `generate`, at most 16.

    An encoder-only model (BERT...) predicts at the masks of `text` instead (`transformer.decode.masked_decode`: one
    step per mask, the trace of its one forward pass).

    Raises CheckpointError, HFModelError or InputError.
    """
    adapter = load(model)
    if not adapter.family.decodes:
        return masked_decode(adapter, text, top_k=top_k)
    return greedy_decode(adapter, text, top_k=top_k, max_steps=max_steps, sampling=sampling, keep=keep)


@_one_line_errors
def trace(model: Model, text: str, *, max_steps: int | None = None) -> AttentionTrace:
    """The attention trace of the greedy decode of `text`: tokens and (layers, heads, queries, keys) weights per
    kind; `.to_frame()` gives the tidy DataFrame. Raises CheckpointError, HFModelError or InputError."""
    return decode(model, text, max_steps=max_steps).trace


@_one_line_errors
def frame(source: Model | AttentionTrace | DecodeResult, text: str | None = None, *, kind: str | None = None,
          layer: int | None = None, head: int | None = None) -> pd.DataFrame:
    """The tidy DataFrame of a trace (or of a model's trace of `text`): one row per weight, columns kind, layer, head,
    query_index, query_token, key_index, key_token, weight, masked; narrowed to a kind, layer or head if given."""
    if isinstance(source, DecodeResult):
        source = source.trace
    if not isinstance(source, AttentionTrace):
        if text is None:
            raise InputError("frame(model, text) needs the text to decode")
        source = trace(source, text)
    elif text is not None:
        raise ValueError("a trace is already decoded: frame(trace) takes no text")
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; expected one of {', '.join(KINDS)}")
    return source.to_frame(kind, layer, head)


@_one_line_errors
def patch(model: Model, clean: str, corrupted: str, *, step: int | None = None, contrast: str | None = None,
          sites: tuple[str, ...] = SITES) -> PatchingResult:
    """Activation patching (docs/patching.md): how much of the clean answer at output token `step` (1-based; by
    default the first the edit changes) comes back when one activation of `clean`'s run is copied into
    `corrupted`'s; `.frame` has one row per site (site, where, layer, head, position, token, metric, difference,
    recovery), `.summary()` the metric and the unaligned positions. `contrast`: the metric is log p(clean token) −
    log p(contrast). Raises CheckpointError, HFModelError or InputError."""
    adapter = load(model)
    setup = prepare_patching(adapter, clean, corrupted, step=None if step is None else step - 1, contrast=contrast)
    return patch_sites(adapter, setup, [s for s in sites if s != "encoder output" or adapter.family.has_cross])


@_one_line_errors
def circuit(model: Model, clean: str, corrupted: str, *, method: str = EAP_IG, ig_steps: int = 5,
            step: int | None = None, contrast: str | None = None, metric: str = LOGIT_DIFF) -> CircuitResult:
    """The circuit carrying the answer (docs/circuits.md): every edge scored by EAP-IG (or `method="eap"`) at output
    token `step` (1-based; by default the first the edit changes), and the faithfulness of circuits of the top edges by
    real edge patching; `.ranked()`, `.circuit()`, `.faithfulness`, `.as_json()` (the CLI's --json). Raises
    CheckpointError, HFModelError, InputError or ResidualPathError."""
    adapter = load(model)
    pair = pair_from_text(adapter, clean, corrupted, step=None if step is None else step - 1, contrast=contrast)
    return find_circuit([pair], method=method, ig_steps=ig_steps, metric_name=metric)


@_one_line_errors
def lens(model: Model, text: str, *, step: int | None = None, k: int = 5, max_steps: int | None = None,
         encoder_layer: int | None = None) -> pd.DataFrame:
    """The logit lens of the greedy decode of `text` (docs/lens-and-beams.md): with `step` (1-based), one row per
    decoder layer (layer, label, rank and prob of the chosen token, entropy and kl in nats, top, top_prob); without,
    the layers x steps grid (layer, label, step, token, rank, prob, top). `encoder_layer`: an encoder-decoder's
    decoder reads that encoder layer instead of the last (DecoderLens). Raises CheckpointError, HFModelError,
    InputError or ValueError (LensError)."""
    adapter = load(model)
    result = greedy_decode(adapter, text, max_steps=max_steps, residuals=True, encoder_layer=encoder_layer)
    if step is None:
        return lens_grid(every_step_lens(adapter, result, k)).to_frame()
    return step_lens(adapter, result, step - 1, k).to_frame()


def _pick_layer(result: DecodeResult, kind: str, layer: int | None) -> int:
    """The layer asked for (0-based; negative counts from the last), the last one by default."""
    n = result.trace.n_layers(kind)
    chosen = n - 1 if layer is None else layer + n if layer < 0 else layer
    if not 0 <= chosen < n:
        raise ValueError(f"{kind} has {n} layer(s) (0 to {n - 1}); layer {layer} does not exist")
    return chosen


@_one_line_errors
def show(model: Model | DecodeResult, text: str | None = None, *, view: str = "step", kind: str = "cross",
         layer: int | None = None, head: int | None = None, step: int = 1,
         region: tuple[tuple[int, int], tuple[int, int]] | None = None) -> alt.TopLevelMixin:
    """The app's chart of the greedy decode of `text`, for a notebook to draw.

    view "step": the Decode page's step-through (prefix, top-k, source strip, cross-attention rows) with a step
    slider starting at `step` (1-based); "grid": every layer x head of `kind` plus the mean; "head": one map of
    `kind` (`layer`, `head`; head None is the mean of heads), in the mode its trace allows: every weight, or for a
    decode kept as a store (a long prompt) the document's overview, and with `region` ((first row, end row), (first
    key, end key), 0-based, ends excluded) that region's exact weights. `layer` is 0-based (negative from the last;
    the last by default). `model` may also be a `decode` result, then without text. Raises CheckpointError,
    HFModelError, InputError or ValueError (a whole-map view of a long prompt kept as a store among them).
    """
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; expected one of {', '.join(VIEWS)}")
    if kind not in ALL_TITLES:
        raise ValueError(f"unknown attention kind {kind!r}; expected one of {', '.join(KINDS)} (a decoder-only "
                         "model's: self)")
    if isinstance(model, DecodeResult):
        if text is not None:
            raise ValueError("a decode result is already decoded: show(result) takes no text")
        result = model
    else:
        if text is None:
            raise InputError("show(model, text) needs the text to decode")
        result = decode(model, text)
    if view != "step" and kind not in result.trace.kinds:
        raise ValueError(f"this model has no {kind!r} attention; its kinds are {', '.join(result.trace.kinds)}")
    if region is not None and view != "head":
        raise ValueError(f"region: only with view='head' (the map's zoom), not view={view!r}")
    if view == "grid":
        whole_maps(result.trace, "model_view", kind)  # a long prompt kept as a store: refused in one line
        return attention_grid(result.trace, kind)
    chosen = _pick_layer(result, "cross" if view == "step" else kind, layer)
    if head is not None and not 0 <= head < result.trace.n_heads:
        raise ValueError(f"the model has {result.trace.n_heads} heads (0 to {result.trace.n_heads - 1}); "
                         f"head {head} does not exist")
    if view == "head":
        return attention_map(result.trace, kind, chosen, head, region=region)
    return step_slider_chart(result, chosen, head, first_step=max(1, min(step, len(result.steps))))


def _row(result: DecodeResult, kind: str, query: int | None) -> int:
    """The trace row asked for (0-based; negative from the last), the last one by default."""
    n = result.trace.axis_sizes(kind)[0]
    row = n - 1 if query is None else query + n if query < 0 else query
    if not 0 <= row < n:
        raise ValueError(f"{kind} has {n} query position(s) (0 to {n - 1}); query {query} does not exist")
    return row


@_one_line_errors
def inside(model: Model, text: str, *, kind: str = "cross", layer: int | None = None,
           head: int = 0, query: int | None = None) -> HeadComputation:
    """Inside one head (docs/insides.md): every stage of head `head` of `kind`, `layer` (0-based; negative from the
    last; the last by default) for the trace's query row `query` (the last by default) of the greedy decode of
    `text`: `.query_vector`, `.keys`, `.products`, `.dots`, `.scale`, `.terms`, `.scores`, `.weights` (the map's row),
    `.values`, `.weighted_values`, `.head_output`, `.share` (after W_O), `.contributions` (||α_j W_O v_j||).
    Raises CheckpointError, HFModelError, InputError or ValueError (a kind, layer, head or query it has not got)."""
    adapter = load(model)
    result = decode(adapter, text)
    adapter.family.check(kind)
    chosen = _pick_layer(result, kind, layer)
    return computation_at(adapter, capture_decode(adapter, result), kind, chosen, head, _row(result, kind, query))


@_one_line_errors
def contributions(model: Model, text: str, *, kind: str = "cross", layer: int | None = None,
                  head: int | None = None) -> alt.TopLevelMixin:
    """The contribution map ||α_ij W_O^h v_j|| of `kind`, `layer` (the last by default) and `head` (None: the norm
    of the mean of the heads' vectors) for the greedy decode of `text`, as the Attention page's "Map shows:
    contribution" draws it. Raises ValueError."""
    adapter = load(model)
    result = decode(adapter, text)
    adapter.family.check(kind)
    chosen = _pick_layer(result, kind, layer)
    captured = capture_decode(adapter, result)
    matrix = trace_view(captured, kind, _contributions(adapter, captured, kind, chosen, head))
    queries, keys = result.trace.labels(kind)
    who = "mean of heads" if head is None else f"head {head + 1}"
    return contribution_heatmap(matrix, queries, keys, f"{result.trace.family.title(kind)} · layer {chosen + 1}"
                                f" · {who} · contribution")


@_one_line_errors
def qk(model: Model, text: str, head: str | Head, query: int, key: int, *, step: int | None = None) -> pd.DataFrame:
    """One score taken apart (docs/why-it-looks-there.md): the head's score at (`query`, `key`) (0-based positions on
    its query and key axes, specials included) of the greedy decode of `text` (read up to output `step`, 1-based) as
    one row per pair (query_part, key_part, contribution), largest first; `.attrs` holds "score" (the model's; Gemma
    2's before its soft-cap), "terms" (mask, T5's position bias), the two tokens and, where the model has them,
    "soft_cap", "pre_cap_score", "softmax_input", "sink", "sliding_window". Raises ValueError (a head or position it
    has not got)."""
    adapter = load(model)
    chosen = Head.parse(head) if isinstance(head, str) else head
    parts = decode_parts(adapter, text, step=step)
    table = qk_attribution(parts.capture, chosen, query, key)
    rows = pd.DataFrame(table.pairs(), columns=["query_part", "key_part", "contribution"])
    q_tokens, k_tokens = parts.tokens(chosen.kind)
    rows.attrs.update(score=table.score, terms=table.terms, query_token=q_tokens[query], key_token=k_tokens[key])
    rows.attrs.update({k: v for k, v in table.as_dict().items() if k in ("soft_cap", "pre_cap_score",
                                                                       "softmax_input", "sink", "sliding_window")})
    return rows
