"""The one-pass ablation estimate on decoder-only models (ours, GPT-2's Conv1D projections, Llama's grouped-query
attention): each head's estimate is the model's own first-order change of log p(output) when the head's output is
scaled down a little (a finite difference through the head mask), its prompt's rows left out of the score."""
from __future__ import annotations

import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.hf_causal_models import build
from transformer.analysis import estimate_head_effects, output_ids
from transformer.analysis.patching.ablation import output_log_prob, teacher_inputs
from transformer.decode import greedy_decode
from transformer.store import open_model

EPS = 1e-3


def _check(adapter, text: str, heads: int = 4) -> None:
    output = output_ids(greedy_decode(adapter, text))
    estimate = estimate_head_effects(adapter, text, output)
    src, tgt_in = teacher_inputs(adapter, text, output)
    targets = torch.tensor(output)
    base = output_log_prob(adapter, src, tgt_in, targets)
    for row in estimate.head(heads).itertuples():
        mask = {k: torch.ones(*c) for k, c in adapter.head_counts().items()}
        mask[row.kind][row.layer, row.head] = 1 - EPS
        slope = (base - output_log_prob(adapter, src, tgt_in, targets, mask)) / EPS
        assert row.estimate == pytest.approx(slope, rel=0.03, abs=0.01), row.label


def test_our_decoder_only_model():
    _check(open_model(str(ROOT / "checkpoints" / "reverse-decoder-only")), "abcdef")


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_hugging_face_causal_models(family, tmp_path):
    _check(open_model(str(build(family, tmp_path / family))), "A man in a blue shirt")
