"""The link format: query parameters <-> validated view values, without Streamlit (see README, "Shareable links").

Parsing is in two passes: `parse_params` checks each parameter on its own (type, length, known words) and
`check_sizes` checks layers, heads and ablated heads against the model's sizes. A bad parameter is dropped with a
short note; nothing here raises on user input. Layers and heads are 1-based in a link, 0-based in the app.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from transformer.analysis import CORPUS_STATISTICS, METHODS, SEGMENT_FILTERS, STATISTICS
from transformer.charts import OVERVIEW_SCALES
from transformer.decode import GROUPINGS, MAX_INPUT_CHARS, MEAN_HEAD
from transformer.model import ALL_KINDS, Head

MEAN = MEAN_HEAD  # the head pickers' value for "mean of heads"
MODES = ("greedy", "teacher")
COMPARE_MODES = ("models", "edit")  # Compare: two models on one input, or one model on an input and its edit
COMPARE_WAYS = ("inputs", "models")  # an encoder-only model's Compare: two inputs through it, or one through two models
MAX_STAGE = 99  # the Learn tour's stages (the page checks the number against its tour)
# the head overview's "Colour each head by": a statistic of this input, or ("corpus:" + name) of the corpus statistics
OVERVIEW_COLOURS = (*STATISTICS, *(f"corpus:{name}" for name in CORPUS_STATISTICS))
COMBINE = ("pick", "max", "rollout", "group")  # the Attention page's "Combine heads" (group: key/value group mean)
MAP_SHOWS = ("weight", "contribution")  # the Attention page's "Map shows": the weight α or ||α·W_O v||
VIEWS = ("greedy", "teacher", "forced")  # the Decode page's step-through views ("forced" needs `force`)
MAX_TOKEN_CHARS = 200
MAX_TOP_K = 20
MAX_STEP = 10_000
# "source:name" as in the model picker (a run's name may hold spaces; a hub-style "org/name" one slash); only an id
# the picker lists is ever used, so a link cannot name a path: this only turns garbage away with a clear note
_NAME = r"[A-Za-z0-9][A-Za-z0-9 ._@+-]{0,127}"
_MODEL_ID = re.compile(rf"^(?:live|[a-z]{{2,12}}:{_NAME}(?:/{_NAME})?)$")
MAX_ABLATED = 64
_POLL_ID = re.compile(r"^[0-9a-f]{10}$")  # ui.server.polls' ids
MAX_POLL_OPTIONS, MAX_POLL_VOTES = 64, 2_000  # ui.server.polls' MAX_OPTIONS and MAX_VOTERS (a test checks them)
TRUE, FALSE = ("1", "true", "on", "yes"), ("0", "false", "off", "no")


@dataclass(frozen=True)
class ModelSizes:
    """What layer and head numbers a model has (`by_kind`: the layers of each of its kinds, where known)."""

    encoder_layers: int
    decoder_layers: int
    heads: int
    by_kind: dict[str, int] | None = field(default=None, hash=False)

    @classmethod
    def from_counts(cls, counts: Mapping[str, tuple[int, int]]) -> "ModelSizes":
        """From a model's head_counts(): kind -> (layers, heads)."""
        layers = {kind: n for kind, (n, _) in counts.items()}
        heads = max((h for _, h in counts.values()), default=0)
        return cls(layers.get("encoder_self", 0), max(layers.values(), default=0), heads, layers)

    def layers(self, kind: str) -> int:
        """Number of layers of an attention kind (0 for a kind the model does not have)."""
        if self.by_kind is not None:
            return self.by_kind.get(kind, 0)
        return self.encoder_layers if kind == "encoder_self" else self.decoder_layers

    def has(self, kind: str) -> bool:
        """True when the model has this attention kind."""
        return self.by_kind is None or kind in self.by_kind


def _flag(value: str) -> bool:
    low = value.strip().lower()
    if low in TRUE:
        return True
    if low in FALSE:
        return False
    raise ValueError("expected 1 or 0")


def _int(value: str, low: int, high: int) -> int:
    if not re.fullmatch(r"\s*\d{1,6}\s*", value):
        raise ValueError("expected a whole number")
    number = int(value)
    if not low <= number <= high:
        raise ValueError(f"expected {low}–{high}")
    return number


def _float(value: str, low: float, high: float, open_low: bool = False) -> float:
    """A number in [low, high] ((low, high] with `open_low`): a sampling setting."""
    if not re.fullmatch(r"\s*\d{1,6}(\.\d{1,6})?\s*", value):
        raise ValueError("expected a number")
    number = float(value)
    if not (low < number if open_low else low <= number) or number > high:
        raise ValueError(f"expected {'above ' if open_low else ''}{low:g}–{high:g}")
    return number


def _text(value: str) -> str:
    if len(value) > MAX_INPUT_CHARS:
        raise ValueError(f"{len(value):,} characters; the limit is {MAX_INPUT_CHARS:,}")
    return value


PATCH_SITES = ("encoder output", "head", "residual", "head per position")  # analysis.patching_sites' names


def _patch_site(value: str) -> str:
    """A patched site on Decode (`psite`, from a click on Compare's patching map): site|where|layer|head|position,
    then the target step (1-based; without it, 1)."""
    parts = value.split("|")
    if len(parts) not in (5, 6) or parts[0] not in PATCH_SITES or not re.fullmatch(r"[a-z_]{1,20}", parts[1]) or \
            not all(re.fullmatch(r"-?\d{1,6}", p) for p in parts[2:]) or (len(parts) == 6 and int(parts[5]) < 1):
        raise ValueError("expected site|where|layer|head|position|step")
    return value


def _choice(value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError("expected one of " + ", ".join(choices))
    return value


def _positions(value: str) -> tuple[int, ...]:
    """Token positions to mask (an encoder-only model's Decode page): '3,5' (0-based, at most 64)."""
    parts = [p for p in value.split(",") if p.strip()]
    if len(parts) > 64:
        raise ValueError("at most 64 positions")
    return tuple(sorted({_int(p, 0, 99_999) for p in parts}))


def _model(value: str) -> str:
    if not _MODEL_ID.fullmatch(value) or ".." in value:
        raise ValueError("not a model name from the model picker")
    return value


def _force(value: str) -> tuple[int, str]:
    """`3:Frau` -> (3, "Frau"): at output step 3 (1-based) the token "Frau" is forced."""
    step, sep, token = value.partition(":")
    if not sep or not token:
        raise ValueError("expected STEP:TOKEN, e.g. 3:Frau")
    if len(token) > MAX_TOKEN_CHARS:
        raise ValueError(f"a token of at most {MAX_TOKEN_CHARS} characters")
    return _int(step, 1, MAX_STEP), token


def _head(value: str) -> int:
    return MEAN if value.strip().lower() == "mean" else _int(value, 1, 999) - 1


def parse_ablated(value: str) -> tuple[Head, ...]:
    """`cross.L1H2,enc.L2H1` -> (Head("cross", 0, 1), Head("encoder_self", 1, 0)); raises ValueError naming the bad
    item. `cross:L1H2` (the app's and the CLI's head labels) reads the same (`Head.parse`, the one parser)."""
    if not value.strip():
        return ()
    items = [item.strip() for item in value.split(",")]
    if len(items) > MAX_ABLATED:
        raise ValueError(f"at most {MAX_ABLATED} heads")
    heads = tuple(dict.fromkeys(Head.parse(item) for item in items))
    for head in heads:
        if head.layer < 0 or head.head < 0:
            raise ValueError(f"{head.format('.')!r}: layers and heads are numbered from 1")
    return heads


def format_ablated(heads: tuple[tuple[str, int, int], ...]) -> str:
    """The inverse of parse_ablated."""
    return ",".join(Head(*h).format(".") for h in heads)


def labels_to_heads(labels: list[str]) -> tuple[tuple[str, int, int], ...]:
    """The ablation picker's labels (`Head.label`: "cross:L1H2") -> link heads."""
    return parse_ablated(",".join(labels))


def _doc(value: str) -> str:
    """A document's hash (its text is kept on the server, never in the link)."""
    if not re.fullmatch(r"[0-9a-f]{32}", value):
        raise ValueError("not a document's hash")
    return value


def _region(value: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """A document's zoomed region, 'rows,keys' each 'first-last' (0-based token positions, both ends included, as
    the zoom's title): ((first row, row after the last), (first key, key after the last))."""
    parts = value.split(",")
    if len(parts) != 2 or not all(re.fullmatch(r"\s*\d{1,7}\s*-\s*\d{1,7}\s*", p) for p in parts):
        raise ValueError("expected rows,keys as first-last (e.g. 0-255,0-255)")
    (r0, r1), (k0, k1) = (tuple(int(n) for n in p.split("-")) for p in parts)
    if r1 < r0 or k1 < k0:
        raise ValueError("each range's last position comes after its first")
    return (r0, r1 + 1), (k0, k1 + 1)


def _poll_id(text: str) -> str:
    if not _POLL_ID.match(text):
        raise ValueError("not a poll's id")
    return text


def _votes(text: str) -> tuple[int, ...]:
    """A revealed poll's votes, one count per option in the poll's order, dot-separated: `0.3.1.0`."""
    parts = text.split(".")
    if not 2 <= len(parts) <= MAX_POLL_OPTIONS or not all(re.fullmatch(r"\d{1,4}", p) for p in parts):
        raise ValueError(f"expected 2 to {MAX_POLL_OPTIONS} vote counts separated by dots")
    counts = tuple(int(p) for p in parts)
    if sum(counts) > MAX_POLL_VOTES:
        raise ValueError(f"a poll takes at most {MAX_POLL_VOTES:,} votes")
    return counts


# parameter -> (parser of the link's text, formatter back to text)
def _dictionary_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,120}", value) or value.startswith("."):
        raise ValueError("expected a dictionary folder's name")
    return value


PARSERS: dict[str, Any] = {
    "model": _model,
    "compare": _model,
    "cmode": lambda v: _choice(v, COMPARE_MODES),
    "edit": _text,
    "way": lambda v: _choice(v, COMPARE_WAYS),
    "text_b": _text,
    "stage": lambda v: _int(v, 1, MAX_STAGE) - 1,  # the Learn tour's stage, numbered from 1 as its titles
    "gold": _flag,  # the gold alignment outlined on a map (Decode, Attention); on unless the link says 0
    "colour": lambda v: _choice(v, OVERVIEW_COLOURS),
    "attr": lambda v: _choice(v, METHODS),  # the step's attribution method (Decode)
    "pred": lambda v: _int(v, 1, 99_999) - 1,  # an encoder-only model's prediction whose attribution is shown
    "pfrom": _text,
    "psite": _patch_site,
    "text": _text,
    "doc": _doc,  # a long input by its hash (ui.server.kept_inputs), on Decode
    "dsteps": lambda v: _int(v, 1, 64),  # the document's decode steps (the Steps to decode box's range)
    "zoom": _region,  # the document's zoomed region (checked against the input where it is drawn)
    "oscale": lambda v: _choice(v, OVERVIEW_SCALES),  # the document's overview coloured on a log or linear scale
    "ref": _text,
    "mode": lambda v: _choice(v, MODES),
    "view": lambda v: _choice(v, VIEWS),
    "force": _force,
    "kind": lambda v: _choice(v, ALL_KINDS),
    "layer": lambda v: _int(v, 1, 999) - 1,
    "head": _head,
    "step": lambda v: _int(v, 1, MAX_STEP),
    "topk": lambda v: _int(v, 2, MAX_TOP_K),
    "fixed": _flag,
    "hide": _flag,
    "combine": lambda v: _choice(v, COMBINE),
    "show": lambda v: _choice(v, MAP_SHOWS),
    "query": lambda v: _int(v, 1, 99_999) - 1,  # the head computation's query position
    "dict": _dictionary_name,  # a dictionary folder's name (the Features page)
    "feature": lambda v: _int(v, 0, 1 << 20),  # a dictionary feature, 0-based as the dictionary's rows
    "qkq": lambda v: _int(v, 1, 99_999) - 1,  # What made this score: its query and key positions
    "qkk": lambda v: _int(v, 1, 99_999) - 1,
    "circ": lambda v: _int(v, 1, 10_000_000),  # Compare's circuit: the edges in it (n, the slider)
    "tau": lambda v: _float(v, 0.0, 0.5),  # the route graph's threshold
    "words": _flag,
    "group": lambda v: _choice(v, GROUPINGS),  # a document's tokens grouped into words, sentences, lines or turns
    "present": _flag,
    "ablate": parse_ablated,
    # sampling on the Decode page: not `topk`, which is how many candidates each step shows
    "temperature": lambda v: _float(v, 0.0, 100.0),
    "sample_topk": lambda v: _int(v, 0, 999_999),
    "top_p": lambda v: _float(v, 0.0, 1.0, open_low=True),
    "seed": lambda v: _int(v, 0, 999_999),
    # the beam tree's width (the Beam width box's range, ui/views/features/beam.py) and the DecoderLens's encoder
    # layer (0: the embeddings; the encoder's own output, the default, is left out of a link)
    "beam": lambda v: _int(v, 2, 8),
    "enc_layer": lambda v: _int(v, 0, 999),
    # Decode's expanders kept open by a reload: the logit lens, and Inside one head with the attention kind it shows
    "lens": _flag,
    "inside": lambda v: _choice(v, ALL_KINDS),
    # an encoder-only model's Decode page: the pair's second sentence, the masked tokens, the segments shown
    "pair": _text,
    "masks": _positions,
    "segment": lambda v: _choice(v, SEGMENT_FILTERS),
    "poll": _poll_id,  # a poll of the room posed on this view (ui.server.polls), while it is open
    "focus": lambda v: _choice(v, ("map",)),  # an example link: its map brought onto the screen once (Attention)
    "votes": _votes,  # its result once revealed: the room's votes per option (a link with it shows the result)
}


def format_value(name: str, value: Any) -> str:
    """A view value as it appears in a link."""
    if name in ("layer", "query", "stage", "pred", "qkq", "qkk"):
        return str(int(value) + 1)
    if name == "head":
        return "mean" if value is None or int(value) == MEAN else str(int(value) + 1)
    if name in ("fixed", "hide", "words", "present", "gold", "lens"):
        return "1" if value else "0"
    if name == "ablate":
        return format_ablated(tuple(value))
    if name == "force":
        return f"{int(value[0])}:{value[1]}"
    if name == "zoom":
        (r0, r1), (k0, k1) = value
        return f"{int(r0)}-{int(r1) - 1},{int(k0)}-{int(k1) - 1}"
    if name == "masks":
        return ",".join(str(int(i)) for i in value)
    if name == "votes":
        return ".".join(str(int(c)) for c in value)
    return str(value)


def parse_params(params: Mapping[str, str | list[str]]) -> tuple[dict[str, Any], list[str]]:
    """Known parameters parsed on their own; a note for each one dropped (unknown names are ignored)."""
    values, notes = {}, []
    for name, raw in params.items():
        if name not in PARSERS:
            continue
        text = raw[-1] if isinstance(raw, list) else raw
        try:
            values[name] = PARSERS[name](str(text))
        except ValueError as exc:
            shown = str(text) if len(str(text)) <= 40 else str(text)[:40] + "…"
            notes.append(f"{name}={shown!r} ignored ({exc})")
    return values, notes


def check_sizes(values: dict[str, Any], sizes: ModelSizes, kind: str) -> tuple[dict[str, Any], list[str]]:
    """Drop a layer, head or ablated head the model does not have (layers counted in `kind`), with notes."""
    values, notes = dict(values), []
    if "kind" in values and not sizes.has(values["kind"]):
        notes.append(f"kind={values.pop('kind')!r} ignored (the model has {', '.join(sizes.by_kind or ())})")
    n_layers = sizes.layers(values.get("kind", kind))
    if "layer" in values and not 0 <= values["layer"] < n_layers:
        notes.append(f"layer {values.pop('layer') + 1} ignored (the model has {n_layers})")
    if "head" in values and values["head"] != MEAN and not 0 <= values["head"] < sizes.heads:
        notes.append(f"head {values.pop('head') + 1} ignored (the model has {sizes.heads})")
    if "enc_layer" in values:
        if not sizes.has("cross") or not sizes.encoder_layers:
            notes.append(f"enc_layer={values.pop('enc_layer')} ignored (the model has no encoder the decoder reads)")
        elif values["enc_layer"] > sizes.encoder_layers:
            notes.append(f"enc_layer={values.pop('enc_layer')} ignored (the encoder has layers 0 to "
                         f"{sizes.encoder_layers})")
        elif values["enc_layer"] == sizes.encoder_layers:
            values["enc_layer"] = None  # the encoder's output: what the decoder reads anyway
    if "ablate" in values:
        bad = [h for h in values["ablate"] if not (0 <= h[1] < sizes.layers(h[0]) and 0 <= h[2] < sizes.heads)]
        if bad:
            notes.append(f"ablate={format_ablated(tuple(bad))!r} ignored (no such head in the model)")
            values["ablate"] = tuple(h for h in values["ablate"] if h not in bad)
    return values, notes


def to_params(values: Mapping[str, Any]) -> dict[str, str]:
    """View values -> query parameters (None values left out), in a fixed order."""
    return {name: format_value(name, values[name]) for name in PARSERS if values.get(name) is not None}
