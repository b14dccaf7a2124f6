"""What the model picker holds: an option's id and label, the model a page decodes with, the session's choice.

Both the catalog (every option, loading) and the Hugging Face loader build on this module; neither imports the
other's internals, so there is no import circle.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st

from transformer.adapters import InspectableModel
from transformer.analysis import positions_summary
from transformer.charts import text_width
from transformer.data import Tokenizer
from transformer.model import ModelFamily, Network
from transformer.store import Checkpoint

SHIPPED, RUN, UPLOAD, LIVE, HF = "shipped", "run", "upload", "live", "hf"
MODEL_KEY = "sidebar_model"
UPLOADS_KEY = "sidebar_uploads"
LOAD_ERROR_KEY = "sidebar_load_error"
MAX_UPLOADS = 5  # per session; the oldest upload is forgotten first
# what text_width may give a picker label: its box holds ~250 pixels of 14-pixel Source Sans, which runs ~13%
# narrower than text_width's estimate (measured in Chromium)
PICKER_LABEL_PX, PICKER_FONT_PX = 280, 14
_SOURCE_LABELS = {SHIPPED: "Shipped", RUN: "Saved run", UPLOAD: "Uploaded", LIVE: "Live training", HF: "Hugging Face"}


@dataclass(frozen=True)
class ModelOption:
    """One entry of the sidebar's model picker."""

    id: str
    name: str
    source: str
    path: Path | None = None

    @property
    def label(self) -> str:
        """What the picker shows: name and where the model comes from."""
        return f"{self.name}  ·  {_SOURCE_LABELS[self.source]}"

    @property
    def short_label(self) -> str:
        """`label` fitted to the sidebar's picker: a long name loses its middle ("reverse-lo…-11-23  ·  Saved run"),
        never the source (the picker used to cut "Uploaded" to "Uploadec")."""
        source = f"  ·  {_SOURCE_LABELS[self.source]}"
        budget = PICKER_LABEL_PX - text_width(source, PICKER_FONT_PX)
        name = self.name
        keep = len(name)
        while keep > 4 and text_width(name, PICKER_FONT_PX) > budget:
            keep -= 1
            name = self.name[: (keep + 1) // 2] + "…" + self.name[len(self.name) - keep // 2:]
        return name + source


@dataclass(frozen=True)
class ActiveModel:
    """The model pages decode with, plus what the sidebar shows about it."""

    option: ModelOption
    cache_key: str  # unique per weights: decoding results are cached under it
    model: Network | None  # our network; None for a Hugging Face model (see `adapter`)
    src_tokenizer: Tokenizer | None
    tgt_tokenizer: Tokenizer | None
    task_spec: dict
    card: dict
    examples: tuple[tuple[str, str], ...] = ()  # (source, reference) pairs known to the model's task
    checkpoint: Checkpoint | None = field(default=None, repr=False)
    weights_step: int | None = None  # the training step the weights are from
    weights_time: float | None = None  # when a live run published them (time.time()); None for checkpoints
    # one shape: every active model carries its adapter (the model behind the interface decoding, traces and
    # export use), built once by whoever builds the ActiveModel (`native_adapter` for ours)
    adapter: InspectableModel = field(repr=False, kw_only=True)

    @property
    def family(self) -> ModelFamily:
        """The model's family: its attention kinds, what its input is called (ask it, never its name)."""
        return self.adapter.family

    @property
    def task_name(self) -> str:
        """Name of the task the model was trained on."""
        return str(self.task_spec.get("name", "?"))

    @property
    def level(self) -> str:
        """"char", "word" or (Hugging Face models) "subword": how the model's tokenizers split text."""
        return "subword" if self.src_tokenizer is None else self.src_tokenizer.kind


@dataclass
class UploadedModel:
    """A checkpoint bundle the user uploaded; lives in this session only."""

    name: str
    checkpoint: Checkpoint
    bundle: bytes
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


def select_model(option_id: str) -> None:
    """Make `option_id` the current model (before the sidebar's picker is drawn, or from a callback)."""
    st.session_state[MODEL_KEY] = option_id


_TASKS = {"corpus": "translation, learned from a parallel corpus", "reverse": "reverse a string of letters",
          "copy": "copy a string of letters", "sort": "sort a string of letters",
          "toy-en-de": "translation of the toy English–German grammar",
          "induction": "continue a stream of random letters whose one chunk repeats",
          "recall": "recall each key's value from earlier in a long stream"}
_LEVELS = {"bpe": "subword tokens (pieces of words)", "char": "one token per character", "word": "one token per word"}


def _translates(card: dict[str, Any]) -> bool:
    return card.get("task") not in ("reverse", "copy", "sort") and isinstance(
        (card.get("metrics") or {}).get("bleu"), (int, float))


def _streams(card: dict[str, Any]) -> bool:
    """A stream task's card (induction, recall): scored on the tokens its streams determine."""
    return isinstance((card.get("metrics") or {}).get("determined_accuracy"), (int, float))


def _task_words(card: dict[str, Any]) -> str:
    task, level = str(card.get("task")), str(card.get("level"))
    return f"{_TASKS.get(task, task)} · reads {_LEVELS.get(level, f'{level} tokens')}"


def card_help(card: dict[str, Any]) -> str | None:
    """What the card's scores are, with the sacrebleu signatures that say how BLEU and chrF were computed (a tooltip:
    the signature itself means nothing to a newcomer), or None for a card with no such scores."""
    metrics = card.get("metrics") or {}
    if _streams(card):
        return ("Determined tokens right: the share of the tokens a validation stream determines (e.g. a recalled "
                "value: each symbol of a key's value when the pair is seen again; the repeat of a repeated chunk) "
                "that the model predicts when fed the stream (teacher forcing). The rest of a stream is random "
                "filler that no model can predict, so a whole stream is never exactly right. Tokens right: the "
                "share of all the stream's tokens right, filler included.")
    if not _translates(card):
        return ("Exact match: the share of validation examples whose whole output is right. Tokens right: the share "
                "of output tokens right when the model is fed the reference (teacher forcing).") if metrics else None
    signatures = [f"`{metrics[k]}`" for k in ("bleu_signature", "chrf_signature") if isinstance(metrics.get(k), str)]
    return ("BLEU and chrF compare the model's translations of the validation set with the reference translations, "
            "0 to 100, higher is better (BLEU counts matching word sequences, chrF matching character sequences). "
            "Tokens right: the share of output tokens right when the model is fed the reference."
            + ("\n\nComputed by sacrebleu, signature: " + " · ".join(signatures) if signatures else ""))


def card_lines(card: dict[str, Any], adapter: InspectableModel | None = None) -> list[str]:
    """The model card as short Markdown lines; with the model's adapter, its local and global layers and log-n
    scaling where it has them (read from the model)."""
    lines = _card_lines(card)
    positions = None if adapter is None else positions_summary(adapter)
    if positions:  # after the sizes
        at = next((i + 1 for i, line in enumerate(lines) if line.startswith("**Size**")), len(lines))
        lines.insert(at, f"**Positions** {positions}")
    return lines


def _card_lines(card: dict[str, Any]) -> list[str]:
    if card.get("source") == "huggingface":
        prefix = f" · prefix {card['prefix']!r}" if card.get("prefix") else ""
        prefix += " · formatted as chat" if card.get("chat") else ""
        layers = (f"{card['n_layers']} layers" if "n_layers" in card  # a decoder-only model: one stack
                  else f"{card.get('n_encoder_layers')}+{card.get('n_decoder_layers')} layers")
        kv = card.get("n_kv_heads")
        heads = f"{card.get('n_heads')} heads" + (f" over {kv} key/value groups" if kv and kv != card.get("n_heads")
                                                   else "")
        return [f"**Hugging Face** {card.get('model_type')} (imported, not trained here){prefix}",
                f"**Size** d_model {card.get('d_model')} · {heads} · {layers} · "
                f"vocabulary {card.get('tgt_vocab_size'):,}",
                f"**Parameters** {card.get('parameters', 0):,}"]
    metrics = card.get("metrics") or {}
    enc, dec = card.get("n_encoder_layers"), card.get("n_decoder_layers")
    layers = {"encoder-only": f"{enc} layers (encoder only)", "decoder-only": f"{dec} layers (decoder only)"}.get(
        str(card.get("architecture")), f"{enc}+{dec} layers")
    n_heads = card.get("n_heads")
    lines = [f"**Task** {_task_words(card)}",
             f"**Size** d_model {card.get('d_model')} · {n_heads} head{'s' if n_heads != 1 else ''} · {layers} · "
             f"d_ff {card.get('d_ff')}",
             f"**Parameters** {card.get('parameters', 0):,}",
             f"**Trained** {card.get('steps', 0):,} steps · {card.get('seconds', 0):,.0f} s"]
    # what means something for the task: a translation's BLEU and chrF (an exact match of a whole sentence is rare
    # and says little), a stream's determined tokens (the rest is random filler), a built-in task's exact match
    scores = (("bleu", "BLEU", "{:.1f}"), ("chrf", "chrF", "{:.1f}")) if _translates(card) else (
        (("determined_accuracy", "determined tokens right", "{:.1%}"),) if _streams(card) else (
            ("exact_match", "exact match", "{:.0%}"),))
    shown = [(label, metrics[key], fmt) for key, label, fmt in (
        *scores, ("token_accuracy", "tokens right", "{:.1%}"), ("loss", "validation loss", "{:.3f}"))
        if isinstance(metrics.get(key), (int, float))]
    if shown:
        lines.append("**Scores** " + " · ".join(f"{label} {fmt.format(value)}" for label, value, fmt in shown))
    if card.get("weights", "last") != "last":
        lines.append(f"**Weights** {card['weights']}")
    known = card.get("known_heads")
    if isinstance(known, dict) and known:  # heads whose role is known (a model with a known circuit)
        lines.append("**Known heads** " + " · ".join(f"`{label}` {role}" for label, role in known.items()))
    return lines
