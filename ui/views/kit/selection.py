"""One selection per page: what a page shows, as one typed record built once per rerun from its widget row and passed
whole to the page's views (as Hugging Face's `GenerationConfig` travels whole to `generate`), and the one table of
each page's link parameters: the widget key each parameter restores, read by the pages' widgets, ui.links and the
tests."""
from __future__ import annotations

from dataclasses import dataclass

from transformer.decode import AttentionTrace, DecodeResult, FillResult, Sampling
from transformer.model import Head
from ui.models import ActiveModel

from .link_params import LINK_PARAMS
from .weights import slide_title
from .widgets import SlideTitle


@dataclass(frozen=True, eq=False)
class Selection:
    """What a page shows: the model, the input and the decode shown, and every choice of the page's widget row.

    Built once per rerun by the page's own function (`attention_selection`, `compare_selection`, …) and passed whole
    to its views, which read the fields they need. A field a page has no widget for keeps its default. Layers and
    heads are 0-based; `head` None is the mean of heads."""

    page: str
    model: ActiveModel
    text: str
    result: DecodeResult  # the decode shown (per token, nothing hidden: what the trace download holds)
    reference: str | None = None  # the reference fed to the decoder (teacher forcing); None: free-running
    mode: str = "greedy"  # which output: free-running ("greedy"), teacher-forced ("teacher"), a forced token ("forced")
    trace: AttentionTrace | None = None  # the maps as drawn (a pair's segment, words merged, sinks hidden)
    kind: str = ""
    layer: int = 0
    head: int | None = None
    step: int | None = None  # 0-based step of the output (Compare, Decode)
    row: int | None = None  # a document's query row (its strip, groups and Inside one head read it)
    group: str = "token"  # a document's grouping of tokens (words, sentences, lines, turns), in the link (`group`)
    ablated: tuple[Head, ...] = ()  # heads switched off
    combine: str = "pick"  # how heads combine on the large map ("pick": the head or the mean as picked)
    shows: str = "weight"  # what the map shows: the weight α or each key's contribution ‖α·W_O v‖
    fixed_scale: bool = True  # colours fixed at 0–1
    hide_sinks: bool = False  # the first token and specials taken off the key axis
    merge_words: bool = False  # subword pieces merged into words
    second: str = ""  # an encoder-only model's second sentence (a pair)
    segment: str = "all"  # a pair's segment filter
    top_k: int = 5  # candidates shown at each step (Decode)
    sampling: Sampling | None = None  # Decode's sampling settings; None: greedy
    fill: FillResult | None = None  # an encoder-only model's predictions at the masks (`result` is the same pass)
    masks: tuple[int, ...] = ()  # the positions clicked to mask (an encoder-only model; masks typed in `text` aside)
    against: Selection | None = None  # Compare: model B's side (its model, decode and kind; the same pickers)

    @property
    def maps(self) -> AttentionTrace:
        """The trace the maps draw (the decode's own unless the page filtered, merged or hid keys)."""
        return self.trace if self.trace is not None else self.result.trace

    @property
    def at(self) -> int:
        """The step shown, on a page that picks one (Decode, Compare); asking elsewhere is a programming error."""
        if self.step is None:
            raise ValueError(f"the {self.page} page picked no step")
        return self.step

    @property
    def other(self) -> Selection:
        """Compare's model B side; asking on a page without one is a programming error."""
        if self.against is None:
            raise ValueError(f"the {self.page} page has no second side")
        return self.against

    @property
    def filled(self) -> FillResult:
        """An encoder-only model's predictions at the masks; asking for another family's is a programming error."""
        if self.fill is None:
            raise ValueError(f"the {self.page} page holds no mask predictions")
        return self.fill

    @property
    def title(self) -> SlideTitle:
        """What a slide's title says besides the view: the model with its weights, the input, the reference."""
        return slide_title(self.model, self.text, self.reference)

    def param_key(self, param: str) -> str:
        """The widget key behind one of this page's link parameters ("ablate" -> "attention_ablate")."""
        return LINK_PARAMS[self.page][param]

    def key(self, name: str) -> str:
        """A key of a widget or chart of this page's views that no link names ("heatmap" -> "attention_heatmap")."""
        return f"{self.page}_{name}"
