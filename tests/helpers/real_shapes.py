"""The app at real shapes: random Hugging Face models of opus-mt-en-de's shape, bart-large's heads and GPT-2 small's
heads, built from their configs into one models folder the app is pointed at, and the 20-word caption users bring."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import BART_LARGE_HEADS, OPUS_MT_SHAPE, build

CAPTION = ("Two young children in blue shirts are playing soccer on a green field near the old church while their "
           "parents watch.")
GPT2_HEADS = dict(d_model=96, layers=12, heads=12, kv_heads=12, ffn=128, positions=1024)  # GPT-2 small's heads
PAGE_PX = 1280


def build_real_shapes(root: Path) -> Path:
    """`root` holding opus-mt-shape, bart-large-heads and gpt2-heads."""
    build("marian", root / "opus-mt-shape", size=OPUS_MT_SHAPE)
    build("bart", root / "bart-large-heads", size=BART_LARGE_HEADS)
    build_causal("gpt2", root / "gpt2-heads", size=GPT2_HEADS)
    return root


def point_app_at(monkeypatch: pytest.MonkeyPatch, runs: Path, hf_root: Path) -> Path:
    """The app on the shipped checkpoints, an empty runs folder and the models in `hf_root` (returned)."""
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(runs))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(hf_root))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    return hf_root
