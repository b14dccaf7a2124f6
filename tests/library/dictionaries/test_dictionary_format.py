"""Dictionaries on disk and on a model: site names and SAELens hook names both ways, a SAELens folder written and
read back with the same encoder, ReLU / top-k / JumpReLU as SAELens computes them, and every mismatch one line."""
from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from tests.helpers.dictionaries import random_dictionary
from tests.helpers.our_models import _ours
from transformer.dictionaries import DictionaryError, Site, load_dictionary, place, save_dictionary


@pytest.mark.parametrize(("label", "hook"), [
    ("resid:L3", "blocks.2.hook_resid_pre"),
    ("attn:self:L2", "blocks.1.attn.hook_z"),
    ("resid:enc:L1", "encoder.blocks.0.hook_resid_pre"),
    ("resid:dec:L2", "decoder.blocks.1.hook_resid_pre"),
    ("resid:enc:out", "encoder.ln_final.hook_normalized"),
    ("attn:enc:L1", "encoder.blocks.0.attn.hook_z"),
    ("attn:dec:L2", "decoder.blocks.1.attn.hook_z"),
    ("attn:cross:L1", "decoder.blocks.0.cross_attn.hook_z"),
])
def test_sites_and_saelens_hook_names_map_both_ways(label: str, hook: str):
    site = Site.parse(label)
    assert site.label == label and site.hook_name == hook and Site.from_hook(hook) == site


@pytest.mark.parametrize("bad", ["resid", "resid:L0", "attn:L2", "resid:cross:L1", "attn:self:out", "mlp:L1", ""])
def test_a_site_that_cannot_be_read_is_one_line(bad: str):
    with pytest.raises(DictionaryError, match="cannot read site") as err:
        Site.parse(bad)
    assert "\n" not in str(err.value)


def _encode_by_hand(d, x):
    pre = (x - d.b_dec) @ d.w_enc + d.b_enc
    if d.activation == "relu":
        return pre.relu()
    if d.activation == "jumprelu":
        return pre.relu() * (pre > d.threshold)
    top = pre.topk(d.k, dim=-1).indices
    return torch.zeros_like(pre).scatter(-1, top, pre.gather(-1, top).relu())


@pytest.mark.parametrize("activation", ["relu", "topk", "jumprelu"])
def test_a_folder_written_reads_back_with_the_same_encoder(activation: str, tmp_path):
    d = random_dictionary(Site.parse("resid:L2"), 16, 40, activation)
    folder = save_dictionary(d, tmp_path / "dict")
    cfg = json.loads((folder / "cfg.json").read_text())
    assert cfg["architecture"] == {"relu": "standard"}.get(activation, activation)
    assert (cfg["d_in"], cfg["d_sae"], cfg["metadata"]["hook_name"]) == (16, 40, "blocks.1.hook_resid_pre")
    back = load_dictionary(folder)
    x = torch.randn(5, 7, 16)
    acts = back.encode(x)
    torch.testing.assert_close(acts, d.encode(x))
    torch.testing.assert_close(acts, _encode_by_hand(d, x))
    assert (acts > 0).any() and (acts == 0).any()
    if activation == "topk":
        assert int((acts > 0).sum(-1).max()) <= 4
    torch.testing.assert_close(back.decode(acts), acts @ d.w_dec + d.b_dec)
    assert not back.trained  # no training report: an untrained dictionary says so


def test_writing_replaces_a_dictionary_folder_and_refuses_any_other(tmp_path):
    site = Site.parse("resid:L1")
    folder = save_dictionary(random_dictionary(site, 8, 10), tmp_path / "d")
    save_dictionary(random_dictionary(site, 8, 12), folder)
    assert load_dictionary(folder).n_features == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no temporary folder left beside it
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(DictionaryError, match="not a dictionary folder"):
        save_dictionary(random_dictionary(site, 8, 10), other)
    assert (other / "keep.txt").read_text() == "mine"


def test_a_saelens_folder_of_another_version_or_kind_is_read_or_refused_in_one_line(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    w = {"W_enc": torch.randn(8, 6), "W_dec": torch.randn(6, 8), "b_enc": torch.zeros(6), "b_dec": torch.zeros(8)}
    save_file(w, str(folder / "sae_weights.safetensors"))
    old = {"d_in": 8, "d_sae": 6, "hook_point": "blocks.0.hook_resid_pre", "activation_fn_str": "topk",
           "activation_fn_kwargs": {"k": 2}, "model_name": "gpt2"}  # SAELens 5: no architecture, top-level hook
    (folder / "cfg.json").write_text(json.dumps(old))
    d = load_dictionary(folder)
    assert (d.activation, d.k, d.site.label, d.model) == ("topk", 2, "resid:L1", "gpt2")
    for change, message in [({"architecture": "gated"}, "gated"), ({"normalize_activations": "layer_norm"},
                            "normalize_activations"), ({"hook_point": "blocks.0.mlp.hook_post"}, "not")]:
        (folder / "cfg.json").write_text(json.dumps({**old, **change}))
        with pytest.raises(DictionaryError, match=message) as err:
            load_dictionary(folder)
        assert "\n" not in str(err.value)
    (folder / "cfg.json").write_text("{not json")
    with pytest.raises(DictionaryError, match="readable"):
        load_dictionary(folder)
    with pytest.raises(DictionaryError, match="not a dictionary folder"):
        load_dictionary(tmp_path / "missing")


def test_a_site_the_model_lacks_or_a_width_it_does_not_have_is_refused_in_one_line():
    causal, seq2seq = _ours("ours-decoder-only-pre"), _ours("ours-pre")
    assert place(Site.parse("resid:L2"), causal).width == 32
    assert place(Site.parse("attn:self:L1"), causal).width == 32  # 4 heads of 8
    assert place(Site.parse("resid:enc:out"), seq2seq).stack == "encoder"
    for site, model, message in [("resid:L9", causal, "layers 1-3"), ("resid:L1", seq2seq, "resid:enc:L1"),
                                 ("attn:cross:L1", causal, "no cross"), ("resid:enc:L1", causal, "one residual"),
                                 ("attn:enc:L3", seq2seq, "layers 1-2")]:
        with pytest.raises(DictionaryError, match=message):
            place(Site.parse(site), model)
    with pytest.raises(DictionaryError, match="reads 16-wide"):
        random_dictionary(Site.parse("resid:L2"), 16, 8).check_width(32, causal.name)


def test_a_dictionary_names_its_model_by_the_name_or_the_folder_the_cli_was_given():
    from dataclasses import replace
    d = random_dictionary(Site.parse("resid:L1"), 8, 4)
    assert replace(d, model="induction").names_model("induction")
    assert replace(d, model="/models/tiny-qwen2").names_model("tiny-qwen2")  # a folder by its path, the app's name
    assert replace(d, model="Qwen/Qwen2-0.5B").names_model("Qwen/Qwen2-0.5B")
    assert not replace(d, model="induction").names_model("recall")
    assert not replace(d, model="").names_model("")  # a dictionary that names no model is nobody's
