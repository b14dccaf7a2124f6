"""Inside one head at the sizes people use: a one-word input, a 20-word caption and the model's maximum length, on
a shipped model and on bart-large's head layout built from config: every stage chart, the contribution map, the
mask picture and the line view are drawn without an exception and none is wider than a 1280 px page."""
from __future__ import annotations

import pytest

from tests.helpers.hf_tiny_models import BART_LARGE_HEADS
from tests.helpers.hf_tiny_models import build as build_seq2seq
from transformer.analysis import capture_decode, computation_at, contributions, mask_matrix, trace_view
from transformer.charts import contribution_heatmap, line_view, mask_picture, stage_charts
from transformer.decode import greedy_decode
from transformer.store import open_model

pytestmark = pytest.mark.slow

CAPTION = "a man in a blue shirt is riding a red bike down the street while two dogs run after him in the sun"
PAGE_PX = 1280


def _width(chart) -> float:
    spec = chart.to_dict(validate=False)
    widths = [spec.get("width", 0)] + [layer.get("width", 0) for layer in spec.get("layer", [])]
    return max(w for w in widths if isinstance(w, (int, float)))


@pytest.fixture(scope="module", params=["reverse", "bart-large-heads"])
def lm(request, tmp_path_factory):
    if request.param == "reverse":
        return open_model("checkpoints/reverse")
    return open_model(str(build_seq2seq("bart", tmp_path_factory.mktemp("bl") / "bart", size=BART_LARGE_HEADS)))


def _texts(lm) -> list[str]:
    longest = " ".join(["a"] * (lm.max_source_len - 4)) if lm.source == "huggingface" else "z" * (lm.max_source_len - 2)
    return ["dog" if lm.source == "huggingface" else "a", CAPTION if lm.source == "huggingface" else CAPTION[:40]
            .replace(" ", ""), longest]


def test_every_view_draws_within_the_page(lm):
    for text in _texts(lm):
        result = greedy_decode(lm, text, max_steps=6)
        captured = capture_decode(lm, result)
        for kind in lm.family.kinds:
            n_layers, n_heads = lm.head_counts()[kind]
            row = result.trace.axis_sizes(kind)[0] - 1
            c = computation_at(lm, captured, kind, n_layers - 1, n_heads - 1, row)
            q_tokens, k_tokens = captured.tokens(kind)
            for name, chart in stage_charts(c, k_tokens).items():
                assert _width(chart) <= PAGE_PX - 320, (text[:20], kind, name)  # beside its formula
            matrix = trace_view(captured, kind, contributions(lm, captured, kind, 0, None))
            queries, keys = result.trace.labels(kind)
            window = (0, min(len(keys), 60))
            assert _width(contribution_heatmap(matrix, queries, keys, "c", window)) <= PAGE_PX
            assert _width(mask_picture(mask_matrix(captured, kind), q_tokens, k_tokens, "m",
                                       (0, min(len(k_tokens), 40)))) <= PAGE_PX
            span = max(result.trace.axis_sizes(kind))
            assert _width(line_view(result.trace, kind, 0, range(min(n_heads, 12)),
                                    window=(0, min(span, 60)))) <= PAGE_PX
