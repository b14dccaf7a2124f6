"""The module-free decoder step (`StepPlan`): the same numbers as the module path, bit for bit; the module path
wherever a hook, a stand-in module or training mode needs it; nothing left on the shared model."""
import pytest
import torch
from torch import nn

from transformer.adapters.residual_steps import recording_calls
from transformer.model import ModelConfig, Seq2SeqTransformer
from transformer.model.step_plan import StepPlan

PAD = 0


def make_model(norm: str) -> Seq2SeqTransformer:
    torch.manual_seed(0)
    cfg = ModelConfig(src_vocab_size=20, tgt_vocab_size=22, d_model=32, n_heads=4, n_encoder_layers=2,
                      n_decoder_layers=3, d_ff=64, dropout=0.1, max_len=12, norm=norm)
    model = Seq2SeqTransformer(cfg).eval()
    with torch.no_grad():  # every norm its own scale and shift, so a norm mixed up with another shows
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.normal_(1.0, 0.2)
                m.bias.normal_(0.0, 0.2)
    return model


def source() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, 20, (3, 9), generator=g)
    src[1, 5:] = PAD  # a padded row: the cross-attention mask matters
    return src


def run_steps(model: nn.Module, src: torch.Tensor, tokens: torch.Tensor, head_mask=None, record: bool = False):
    """Every step's logits and weights, and the cache the steps ran with (recording the residual stream in it when
    `record`)."""
    with torch.inference_mode():
        memory, mask = model.encode(src)
        cache = model.start_cache(memory)
        if record:
            cache.residuals = []
        outs = [model.decode_step(tokens[:, t: t + 1], cache, mask, need_weights=True, head_mask=head_mask)
                for t in range(tokens.size(1))]
    return outs, cache


def tokens(n: int = 8) -> torch.Tensor:
    t = torch.randint(4, 22, (3, n), generator=torch.Generator().manual_seed(2))
    t[:, 0] = 1
    return t


def assert_identical(a, b) -> None:
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x.logits, y.logits)
        for wx, wy in zip(x.decoder_self + x.cross, y.decoder_self + y.cross, strict=True):
            assert torch.equal(wx, wy)


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("ablate", [False, True])
def test_the_plan_gives_the_module_paths_numbers_bit_for_bit(norm, ablate):
    model = make_model(norm)
    head_mask = None
    if ablate:
        head_mask = {"decoder_self": torch.ones(3, 4), "cross": torch.ones(3, 4)}
        head_mask["decoder_self"][0, 1] = head_mask["cross"][2, 3] = 0.0
    fast, cache = run_steps(model, source(), tokens(), head_mask)
    assert isinstance(cache.plan, StepPlan)
    handle = model.decoder[0].register_forward_hook(lambda *args: None)  # any hook: the module path runs
    try:
        slow, cache = run_steps(model, source(), tokens(), head_mask)
    finally:
        handle.remove()
    assert cache.plan is None
    assert_identical(fast, slow)
    if ablate:  # the mask is applied on the plan's path too
        plain, _ = run_steps(model, source(), tokens())
        assert not torch.equal(plain[-1].logits, fast[-1].logits)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_plan_hands_out_the_residual_stream_hooks_would_record(norm):
    """Recording the stream in the cache (the logit lens) keeps the plan's path, changes none of its numbers, and
    gives, bit for bit, what hooks on the decoder's layers record on the module path."""
    model = make_model(norm)
    plain, _ = run_steps(model, source(), tokens())
    fast, cache = run_steps(model, source(), tokens(), record=True)
    assert isinstance(cache.plan, StepPlan)
    assert_identical(fast, plain)
    with recording_calls({"decoder": list(model.decoder)}) as found:
        slow, slow_cache = run_steps(model, source(), tokens(), record=True)
    assert slow_cache.plan is None
    assert_identical(fast, slow)
    n = len(model.decoder) + 1  # the embeddings, then every layer
    assert len(cache.residuals) == len(found["decoder"]) == len(slow_cache.residuals) == tokens().size(1)
    for ours, module_path, hooked in zip(cache.residuals, slow_cache.residuals, found["decoder"], strict=True):
        assert len(ours) == len(module_path) == len(hooked) == n
        for a, b, c in zip(ours, module_path, hooked, strict=True):
            assert a.shape == (3, 1, model.cfg.d_model)
            assert torch.equal(a, b) and torch.equal(a, c)


def test_a_recording_decode_runs_on_the_plan_and_leaves_no_hook(monkeypatch):
    """`greedy_decode(residuals=True)` of our encoder-decoder records through the cache: the plan's step runs for
    every step, and no hook is put on the shared model meanwhile."""
    from tests.helpers.our_models import _ours
    from transformer.decode import greedy_decode

    adapter = _ours("ours-pre")  # our encoder-decoder
    hooked = []
    original = StepPlan.step

    def step(self, *args, **kwargs):
        hooked.append(any(m._forward_hooks or m._forward_pre_hooks for m in adapter.network.modules()))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(StepPlan, "step", step)
    result = greedy_decode(adapter, "abcdefg", max_steps=4, stop_at_end=False, residuals=True)
    assert len(hooked) == len(result.steps) and not any(hooked)
    assert result.residuals.decoder.shape[:2] == (len(result.steps), adapter.head_counts()["decoder_self"][0] + 1)


def test_a_hook_on_the_output_projection_is_honoured():
    model = make_model("pre")
    handle = model.generator.register_forward_hook(lambda module, args, out: out * 0)
    try:
        outs, _ = run_steps(model, source(), tokens(3))
    finally:
        handle.remove()
    assert all(bool((o.logits == 0).all()) for o in outs)


def test_a_substituted_module_is_honoured():
    """A view that stands a module in for the model's own (as attribution's views do) runs that module."""
    import copy

    class Silence(nn.Module):
        def forward(self, x):
            return torch.zeros_like(x)

    model = make_model("pre")
    view = copy.copy(model)
    view._modules = dict(model._modules)
    view._modules["decoder_norm"] = Silence()
    outs, cache = run_steps(view, source(), tokens(3))
    assert cache.plan is None
    for o in outs:  # the generator sees zeros: every row is its bias
        torch.testing.assert_close(o.logits, model.generator.bias.expand_as(o.logits))


def test_training_mode_takes_the_module_path_and_the_model_keeps_nothing():
    model = make_model("pre")
    before = (set(vars(model)), {n: (len(m._forward_hooks), len(m._forward_pre_hooks))
                                  for n, m in model.named_modules()})
    _, cache = run_steps(model, source(), tokens(3))
    assert cache.plan is not None
    after = (set(vars(model)), {n: (len(m._forward_hooks), len(m._forward_pre_hooks))
                                for n, m in model.named_modules()})
    assert after == before
    model.train()
    _, cache = run_steps(model, source(), tokens(3))
    assert cache.plan is None


def test_a_step_past_the_models_length_says_so():
    model = make_model("pre")
    with pytest.raises(ValueError, match="longer than max_len 12"):
        run_steps(model, source(), tokens(13))
