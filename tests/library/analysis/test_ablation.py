"""Head ablation: no head == plain model, all heads of a layer == zeroed attention output, one head == zeroing its
slice by hand, the shared model stays intact while another thread decodes ablated, and bad heads are named."""
import threading

import pytest
import torch

from tests.helpers.tiny_models import tiny_reverse_model
from transformer.adapters import UNEMITTABLE, adapter_for, ban
from transformer.analysis import (
    Head,
    HeadError,
    ablated_decode,
    all_heads,
    first_divergence,
    head_mask,
    output_ids,
    parse_head,
    sweep_heads,
)
from transformer.data import source_ids
from transformer.decode import InputError, greedy_decode


@pytest.fixture(scope="module")
def setup():
    return tiny_reverse_model(seed=0)


@pytest.fixture(scope="module")
def adapter(setup):
    return adapter_for(*setup)


def logits(model, src, tgt, mask=None):
    with torch.no_grad():
        return model.forward_with_attention(src, tgt, mask)[0]


def inputs(st):
    return torch.tensor([source_ids(st.encode("abcdefg"))]), torch.tensor([[1, 5, 6, 7, 8]])


def attention_module(model, kind, layer):
    if kind == "encoder_self":
        return model.encoder[layer].self_attn
    block = model.decoder[layer]
    return block.self_attn if kind == "decoder_self" else block.cross_attn


def test_ablating_no_head_is_the_plain_model(setup, adapter):
    model, st, tt = setup
    assert head_mask(adapter, []) is None
    plain = greedy_decode(adapter_for(model, st, tt), "abcdefg")
    none = greedy_decode(adapter_for(model, st, tt), "abcdefg", head_mask=head_mask(adapter, []))
    assert [s.prob for s in none.steps] == [s.prob for s in plain.steps]
    assert torch.equal(none.trace.cross, plain.trace.cross)
    ones = {kind: torch.ones(2, 4) for kind in ("encoder_self", "decoder_self", "cross")}
    src, tgt = inputs(st)
    assert torch.equal(logits(model, src, tgt, ones), logits(model, src, tgt))


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_all_heads_of_a_layer_equal_a_zeroed_attention_output(setup, adapter, kind):
    model, st, _ = setup
    src, tgt = inputs(st)
    module = attention_module(model, kind, 1)

    def zero_output(mod, args, out):  # the layer's attention output without any head: only out_proj's bias
        return mod.out_proj.bias.expand_as(out[0]), out[1]

    hook = module.register_forward_hook(zero_output)
    try:
        by_hand = logits(model, src, tgt)
    finally:
        hook.remove()
    ablated = logits(model, src, tgt, head_mask(adapter, [Head(kind, 1, h) for h in range(4)]))
    torch.testing.assert_close(ablated, by_hand, rtol=0, atol=1e-5)
    assert not torch.allclose(ablated, logits(model, src, tgt), atol=1e-3)  # it changes the output


def test_one_head_equals_zeroing_its_slice_by_hand(setup, adapter):
    model, st, _ = setup
    src, tgt = inputs(st)
    module = attention_module(model, "cross", 0)
    dh = model.cfg.d_model // model.cfg.n_heads

    def zero_slice(mod, args):  # a pre-hook on the output projection: head 2's slice of its input set to 0
        x = args[0].clone()
        x[..., 2 * dh: 3 * dh] = 0
        return (x,)

    hook = module.out_proj.register_forward_pre_hook(zero_slice)
    try:
        by_hand = logits(model, src, tgt)
    finally:
        hook.remove()
    torch.testing.assert_close(logits(model, src, tgt, head_mask(adapter, [Head("cross", 0, 2)])), by_hand,
                               rtol=0, atol=1e-5)


def test_an_ablated_decode_in_one_thread_leaves_the_other_intact(setup, adapter):
    model, st, tt = setup
    text = "gfedcba"
    plain = greedy_decode(adapter_for(model, st, tt), text)
    heads = [Head("cross", layer, h) for layer in range(2) for h in range(4)]
    alone = ablated_decode(adapter, text, heads)
    assert first_divergence(plain.output_tokens, alone.output_tokens) is not None  # the ablation is visible...
    results, errors = {"plain": [], "ablated": []}, []
    barrier = threading.Barrier(2)

    def run(name, mask_heads):
        try:
            barrier.wait()
            for _ in range(15):
                r = (ablated_decode(adapter, text, mask_heads) if mask_heads
                     else greedy_decode(adapter_for(model, st, tt), text))
                results[name].append(r)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=("plain", [])), threading.Thread(target=run, args=("ablated", heads))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for r in results["plain"]:  # ...and never leaks into the other thread's decode, nor the other way round
        assert [s.prob for s in r.steps] == [s.prob for s in plain.steps]
        assert torch.equal(r.trace.cross, plain.trace.cross)
    for r in results["ablated"]:
        assert [s.prob for s in r.steps] == [s.prob for s in alone.steps]
    assert not any(attention_module(model, k, 0)._forward_hooks for k in ("encoder_self", "cross"))


def test_sweep_measures_the_drop_of_each_head(setup, adapter):
    model, st, tt = setup
    result = greedy_decode(adapter_for(model, st, tt), "abcdefg")
    sweep = sweep_heads(adapter, "abcdefg", output_ids(result))
    assert sweep.complete and len(sweep.frame) == len(all_heads(adapter)) == 24
    assert list(sweep.frame["drop"]) == sorted(sweep.frame["drop"], reverse=True)
    top = sweep.frame.iloc[0]
    src, _ = inputs(st)
    ids = output_ids(result)
    tgt = torch.tensor([[1, *ids[:-1]]])
    mask = head_mask(adapter, [Head(top["kind"], int(top["layer"]), int(top["head"]))])
    scores = ban(logits(model, src, tgt, mask)[0], UNEMITTABLE)  # <pad> and <s> are never chosen when decoding
    by_hand = scores.log_softmax(-1).gather(-1, torch.tensor(ids)[:, None]).sum()
    assert float(top["log_prob"]) == pytest.approx(float(by_hand), abs=1e-4)
    assert sweep.base_log_prob - float(top["log_prob"]) == pytest.approx(float(top["drop"]), abs=1e-6)


def test_sweep_time_cap_stops_early_and_says_so(setup, adapter):
    model, st, tt = setup
    result = greedy_decode(adapter_for(model, st, tt), "abcdefg")
    sweep = sweep_heads(adapter, "abcdefg", output_ids(result), time_cap=0.0)
    assert not sweep.complete and len(sweep.frame) < 24


@pytest.mark.parametrize("label, message", [
    ("cross:L3H1", "2 cross layer"),
    ("cross:L1H5", r"4 head\(s\) per layer"),
    ("enc:L0H1", "numbered 1 to 2"),
    ("self:L1H1", "have no self attention"),
    ("mid:L1H1", "cannot read head"),
    ("", "cannot read head"),
])
def test_a_head_the_model_does_not_have_is_named(adapter, label, message):
    with pytest.raises(HeadError, match=message):
        parse_head(label, adapter)


def test_labels_round_trip_and_bad_selections_are_refused(setup, adapter):
    model, st, tt = setup
    for head in all_heads(adapter):
        assert parse_head(head.label, adapter) == head
    assert parse_head(" Cross:l2h4 ", adapter) == Head("cross", 1, 3)
    with pytest.raises(HeadError, match="no head selected"):
        ablated_decode(adapter, "abc", [])
    with pytest.raises(HeadError):
        head_mask(adapter, [Head("cross", 5, 0)])
    with pytest.raises(InputError):
        sweep_heads(adapter, "   ", [3, 2])
    with pytest.raises(InputError, match="no output"):
        sweep_heads(adapter, "abc", [])
