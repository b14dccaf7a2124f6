"""Model families: the one place that knows which attention kinds a model has, what its input is called and how
each kind's rows and columns are labelled (in the spirit of Hugging Face's `AutoModelFor...` mappings).

Callers never branch on a family's name: they ask `adapter.family` (or `trace.family`) for its kinds, titles,
axes and input role.
"""
from __future__ import annotations

from dataclasses import dataclass, field

SOURCE, TARGET = "source", "target"  # the two token axes a trace carries


@dataclass(frozen=True)
class ModelFamily:
    """What a family of models has: its attention kinds, the axes (query, key) of each, what its input is."""

    name: str  # "encoder-decoder", "decoder-only" or "encoder-only"
    kinds: tuple[str, ...]  # attention kinds, in display order
    titles: dict[str, str] = field(hash=False)  # kind -> "Cross-attention"
    axes: dict[str, tuple[str, str]] = field(hash=False)  # kind -> (query axis, key axis), SOURCE or TARGET
    input_role: str  # what the user types: "source sentence" or "prompt"
    output_role: str  # what comes out: "translation" / "output" or "continuation"
    decoder_kind: str | None  # the causal self-attention over the decoder inputs; None: no decoding (encoder-only)
    encoder_kind: str | None = None  # the encoder's self-attention, where there is an encoder
    cross_kind: str | None = None  # attention from decoder steps to the source, where there is one
    prompt_in_decoder: bool = False  # the input's tokens are the decoder's first inputs (kept in the trace)
    axis_titles: dict[str, str] = field(default_factory=dict, hash=False)  # SOURCE/TARGET -> what the axis shows

    def title(self, kind: str) -> str:
        """The kind's title ("Cross-attention"); KeyError naming the family's kinds for another one."""
        self.check(kind)
        return self.titles[kind]

    def check(self, kind: str) -> str:
        """`kind` itself, or KeyError naming what this family has."""
        if kind not in self.kinds:
            raise KeyError(f"{kind!r} is not an attention kind of {self.name} models; they have "
                           f"{', '.join(self.kinds)}")
        return kind

    def causal(self, kind: str) -> bool:
        """True for a kind whose queries may not see later keys (decoder self-attention)."""
        return self.check(kind) == self.decoder_kind

    @property
    def has_cross(self) -> bool:
        return self.cross_kind is not None

    @property
    def decodes(self) -> bool:
        """Whether the model writes an output token by token (False: it predicts at masks, all positions at once)."""
        return self.decoder_kind is not None

    @property
    def output_kind(self) -> str:
        """The kind whose stack feeds the output head: the decoder's, or an encoder-only model's one kind."""
        return self.decoder_kind if self.decoder_kind is not None else self.encoder_kind  # type: ignore[return-value]

    @property
    def output_stack(self) -> str:
        """The residual stream the output head reads: "decoder", or "encoder" for an encoder-only model."""
        return "decoder" if self.decodes else "encoder"


ENCODER_DECODER = ModelFamily(
    name="encoder-decoder", kinds=("encoder_self", "decoder_self", "cross"),
    titles={"encoder_self": "Encoder self-attention", "decoder_self": "Decoder self-attention",
            "cross": "Cross-attention"},
    axes={"encoder_self": (SOURCE, SOURCE), "decoder_self": (TARGET, TARGET), "cross": (TARGET, SOURCE)},
    input_role="source sentence", output_role="output", decoder_kind="decoder_self", encoder_kind="encoder_self",
    cross_kind="cross", axis_titles={SOURCE: "source tokens", TARGET: "decoder input"})

DECODER_ONLY = ModelFamily(
    name="decoder-only", kinds=("self",), titles={"self": "Self-attention (causal)"},
    axes={"self": (TARGET, TARGET)}, input_role="prompt", output_role="continuation", decoder_kind="self",
    prompt_in_decoder=True, axis_titles={SOURCE: "prompt tokens", TARGET: "prompt and generated tokens"})

ENCODER_ONLY = ModelFamily(  # BERT, RoBERTa, DistilBERT, ModernBERT: one bidirectional stack, predictions at masks
    name="encoder-only", kinds=("encoder_self",), titles={"encoder_self": "Encoder self-attention"},
    axes={"encoder_self": (SOURCE, SOURCE)}, input_role="text", output_role="predictions at the masks",
    decoder_kind=None, encoder_kind="encoder_self", axis_titles={SOURCE: "tokens", TARGET: "tokens"})

FAMILIES: dict[str, ModelFamily] = {f.name: f for f in (ENCODER_DECODER, DECODER_ONLY, ENCODER_ONLY)}
ALL_KINDS = tuple(dict.fromkeys(k for f in FAMILIES.values() for k in f.kinds))  # every kind of every family
ALL_TITLES = {k: t for f in FAMILIES.values() for k, t in f.titles.items()}


def family_of(name: str) -> ModelFamily:
    """The family called `name`; ValueError naming the known ones."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown model family {name!r}; expected one of {', '.join(FAMILIES)}") from None


def family_with_kinds(kinds: tuple[str, ...] | list[str]) -> ModelFamily:
    """The family whose kinds are exactly `kinds` (for reading a trace that does not name its family)."""
    for family in FAMILIES.values():
        if tuple(kinds) == family.kinds or set(kinds) == set(family.kinds):
            return family
    raise ValueError(f"no model family has the attention kinds {', '.join(kinds)}")
