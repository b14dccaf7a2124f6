"""What the app says of a decoder-only model's positions with local and global layers and log-n scaling: the
positions sentence, the picture's title and the card's line name the local layers (RoPE, a window) and the global
ones (no positions) that the model itself has, checked against its attention; a plain RoPE model reads as before."""
from __future__ import annotations

import torch

from transformer.adapters import adapter_for, position_scheme
from transformer.analysis import model_positions, positions_summary, rotating_layers
from transformer.charts import position_picture
from transformer.data import build_char_tokenizer
from transformer.model import ModelConfig, build_model

TOK = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")
WINDOW, LOGN, N = 4, 512, 24
ROPE_SENTENCE = ("RoPE rotates each pair of query and key dimensions by the position times that pair's frequency, so a "
                 "query–key dot product depends on their distance; nothing is added to the tokens.")


def _adapter(**kw):
    cfg = dict(src_vocab_size=TOK.vocab_size, tgt_vocab_size=TOK.vocab_size, d_model=32, n_heads=2, n_decoder_layers=4,
               d_ff=16, dropout=0.0, max_len=1024, architecture="decoder-only", positions="rope")
    torch.manual_seed(0)
    return adapter_for(build_model(ModelConfig(**{**cfg, **kw})).eval(), TOK, TOK, name="tiny")


def _maps(adapter) -> list[torch.Tensor]:
    """Each layer's weights (H, N, N) over one repeated token: every layer's input is then the same at every
    position, so a layer without positions weighs its causal keys evenly and a rotating one does not."""
    ids = torch.full((1, N), 5)
    with torch.no_grad():
        _, maps = adapter.network.full(ids, ids[:, :0], need_weights=True)
    return [m[0] for m in maps]


def _local(w: torch.Tensor) -> bool:
    """Nothing outside the window, and weights within it that differ (the rotation tells positions apart)."""
    i, j = torch.meshgrid(torch.arange(N), torch.arange(N), indexing="ij")
    return bool(w[:, i - j >= WINDOW].abs().max() == 0) and float(w[:, -1, -WINDOW:].std()) > 1e-4


def _global(w: torch.Tensor) -> bool:
    """Every causal key weighed evenly: it sees every position and tells none apart."""
    even = torch.tril(torch.ones(N, N)) / torch.arange(1, N + 1)[:, None]
    return torch.allclose(w, even.expand_as(w), atol=1e-5)


def test_the_sentence_names_the_local_and_global_layers_the_model_has():
    adapter = _adapter(window=WINDOW, global_every=2, logn_length=LOGN)
    maps = _maps(adapter)
    assert [_local(w) for w in maps] == [True, False, True, False]
    assert [_global(w) for w in maps] == [False, True, False, True]
    scheme = model_positions(adapter)
    assert scheme is not None and scheme.sentence.startswith(ROPE_SENTENCE)
    assert (f"Layers 1 and 3 are local: RoPE rotates its queries and keys, and each query sees only the {WINDOW} "
            f"latest positions (its own and the {WINDOW - 1} before it: a sliding window).") in scheme.sentence
    assert "Layers 2 and 4 are global: each query sees every position, with no positions at all" in scheme.sentence
    assert (f"is multiplied by ln n / ln {LOGN} (log-n scaling, on layers 2 and 4 only: a local layer's query sees at "
            f"most {WINDOW} keys)") in scheme.sentence
    assert rotating_layers(adapter) == (0, 2)  # the frequencies pictured are those of the rotating layers
    title = position_picture(scheme, "tiny", rotating_layers(adapter)).to_dict(validate=False)["title"]
    assert title == "tiny · RoPE (layers 1, 3): rotation frequency of each dimension pair"
    assert positions_summary(adapter) == (f"layers 1 and 3 local (RoPE, window {WINDOW}) · layers 2 and 4 global (no "
                                          f"positions) · queries log-n scaled past {LOGN} keys")


def test_every_layer_local_and_log_n_scaling_that_never_applies_are_said():
    adapter = _adapter(window=WINDOW, logn_length=LOGN)
    assert all(_local(w) for w in _maps(adapter))
    scheme = model_positions(adapter)
    assert scheme is not None and "Every layer is local" in scheme.sentence and "global" not in scheme.sentence
    assert f"Log-n scaling past {LOGN} keys never applies" in scheme.sentence and rotating_layers(adapter) == ()
    assert positions_summary(adapter) == f"every layer local (RoPE, window {WINDOW})"


def test_a_plain_rope_model_reads_as_before():
    adapter = _adapter()
    assert not any(_global(w) for w in _maps(adapter))  # every layer rotates and sees every position
    scheme = model_positions(adapter)
    assert scheme is not None and scheme.sentence == ROPE_SENTENCE == position_scheme(adapter).sentence
    assert rotating_layers(adapter) == ()
    assert position_picture(scheme, "tiny", rotating_layers(adapter)).to_dict(validate=False)["title"] == (
        "tiny · RoPE: rotation frequency of each dimension pair")
    assert positions_summary(adapter) is None


def test_the_rope_picture_draws_a_bar_for_every_pair_on_its_log_scale():
    """The frequencies span 1 to ~1e-4 on a log scale: each pair's bar is drawn with a height (a stacked bar starts at
    0, which a log scale cannot place: the picture was blank, its axis unlabelled)."""
    import json
    import re

    import vl_convert

    scheme = model_positions(_adapter())
    svg = vl_convert.vegalite_to_svg(json.dumps(position_picture(scheme, "tiny").to_dict()))
    bars = re.findall(r'aria-roledescription="bar" d="M[^"]*?v([-\d.e]+)', svg)
    assert len(bars) == len(scheme.table) and all(float(h) > 0 for h in bars), bars
