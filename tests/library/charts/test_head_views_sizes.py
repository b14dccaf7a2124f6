"""Inside one head at the sizes people use: a one-word input, a 20-word caption and the model's maximum length, on
the shipped reversal and Multi30k models and on bart-large's, opus-mt's and GPT-2's layouts built from config (their
layers, heads and maximum lengths, narrow vectors): every stage chart, the contribution map, the mask picture and the
line view are drawn without an exception and none is wider than a 1280 px page."""
from __future__ import annotations

import pytest

from tests.helpers.hf_causal_models import build as build_causal
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


OPUS_MT_HEADS = dict(d_model=64, layers=6, heads=8, ffn=64, positions=512)  # opus-mt-en-de's layout, narrow
GPT2_HEADS = dict(d_model=48, layers=12, heads=12, kv_heads=12, ffn=64, positions=1024)  # gpt2's layout, narrow


@pytest.fixture(scope="module", params=["reverse", "multi30k-en-de", "bart-large-heads", "opus-mt-heads", "gpt2-heads"])
def adapter(request, tmp_path_factory):
    if request.param in ("reverse", "multi30k-en-de"):
        return open_model(f"checkpoints/{request.param}")
    folder = tmp_path_factory.mktemp(request.param) / request.param
    if request.param == "gpt2-heads":
        return open_model(str(build_causal("gpt2", folder, size=GPT2_HEADS)))
    family, size = ("bart", BART_LARGE_HEADS) if request.param == "bart-large-heads" else ("marian", OPUS_MT_HEADS)
    return open_model(str(build_seq2seq(family, folder, size=size)))


def _texts(adapter) -> list[str]:
    if adapter.name == "reverse":  # letters, no spaces
        return ["a", CAPTION[:40].replace(" ", ""), "z" * (adapter.max_source_len - 2)]
    words, longest = CAPTION.split(), []
    while len(adapter.tokenize_source(" ".join(longest)).ids) < adapter.max_source_len - 8:  # a few tokens short
        longest.append(words[len(longest) % len(words)])
    return ["dog", CAPTION, " ".join(longest)]


def test_every_view_draws_within_the_page(adapter):
    for text in _texts(adapter):
        result = greedy_decode(adapter, text, max_steps=6)
        captured = capture_decode(adapter, result)
        for kind in adapter.family.kinds:
            n_layers, n_heads = adapter.head_counts()[kind]
            row = result.trace.axis_sizes(kind)[0] - 1
            c = computation_at(adapter, captured, kind, n_layers - 1, n_heads - 1, row)
            q_tokens, k_tokens = captured.tokens(kind)
            for name, chart in stage_charts(c, k_tokens).items():
                assert _width(chart) <= PAGE_PX - 320, (text[:20], kind, name)  # beside its formula
            matrix = trace_view(captured, kind, contributions(adapter, captured, kind, 0, None))
            queries, keys = result.trace.labels(kind)
            window = (0, min(len(keys), 60))
            assert _width(contribution_heatmap(matrix, queries, keys, "c", window)) <= PAGE_PX
            assert _width(mask_picture(mask_matrix(captured, kind), q_tokens, k_tokens, "m",
                                       (0, min(len(k_tokens), 40)))) <= PAGE_PX
            span = max(result.trace.axis_sizes(kind))
            assert _width(line_view(result.trace, kind, 0, range(min(n_heads, 12)),
                                    window=(0, min(span, 60)))) <= PAGE_PX
