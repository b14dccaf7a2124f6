"""Our decoder-only architecture: a prefix LM over source, separator and target, with the encoder-decoder's
calling convention; incremental decoding equals the full forward, padding changes nothing, checkpoints keep the
architecture (old ones without it are encoder-decoders), resume continues, and a short training run on reversal
decodes with a causal trace."""
from __future__ import annotations

import json

import pytest
import torch

from transformer.adapters import adapter_for, greedy_batch
from transformer.data import TaskSpec, build_char_tokenizer, make_task
from transformer.decode import greedy_decode, teacher_forced
from transformer.model import ModelConfig, build_model, default_configs
from transformer.store import load_checkpoint, open_model, save_checkpoint
from transformer.train import Trainer, checkpoint_from_trainer, evaluate_model, trainer_from_checkpoint

TOK = build_char_tokenizer("abcdefghijklmnopqrstuvwxyz")


def _model(seed: int = 0):
    cfg = ModelConfig(src_vocab_size=TOK.vocab_size, tgt_vocab_size=TOK.vocab_size, d_model=32, n_heads=4,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=48, architecture="decoder-only")
    torch.manual_seed(seed)
    return build_model(cfg).eval()


def test_the_trace_is_one_causal_matrix_over_source_separator_and_output():
    adapter = adapter_for(_model(), TOK, TOK)
    result = greedy_decode(adapter, "abcde", max_steps=5)
    trace = result.trace
    assert adapter.family.name == "decoder-only" and trace.kinds == ("self",)
    assert trace.decoder_input_tokens[:7] == ("a", "b", "c", "d", "e", "</s>", "<s>")
    assert trace.step_offset == 6 and trace.source_tokens == ("a", "b", "c", "d", "e", "</s>")
    src = torch.tensor([adapter.tokenize_source("abcde").ids])
    tgt = torch.tensor([[1, *[s.token_id for s in result.steps[:-1]]]])
    full = adapter.model.forward_with_attention(src, tgt).attentions["self"]
    for layer, w in enumerate(full):  # cached steps equal the full forward
        torch.testing.assert_close(w[0], trace.weights("self")[layer], atol=1e-5, rtol=0)
    teacher = teacher_forced(adapter, "abcde", "edcba")
    assert teacher.trace.decoder_input_tokens[-5:] == tuple("edcba") and teacher.trace.step_offset == 6


def test_padding_in_a_batch_changes_nothing():
    model = _model()
    alone = greedy_batch(model, torch.tensor([[3, 4, 5, 6, 2]]), 6)
    padded = greedy_batch(model, torch.tensor([[3, 4, 5, 6, 2, 0, 0], [7, 8, 9, 10, 11, 12, 2]]), 6)
    assert padded[0] == alone[0]


def _tiny_trainer(steps: int, **train) -> Trainer:
    task = make_task(TaskSpec(name="reverse", n_train=2000, n_valid=50, min_len=3, max_len=6))
    model_cfg, train_cfg = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           model_overrides=dict(architecture="decoder-only", n_decoder_layers=2),
                                           train_overrides=dict(max_seconds=None, eval_every=10_000,
                                                                max_steps=steps) | train)
    return Trainer(task, model_cfg, train_cfg)


def test_checkpoints_keep_the_architecture_and_resume(tmp_path):
    trainer = _tiny_trainer(20)
    trainer.run()
    path = save_checkpoint(checkpoint_from_trainer(trainer), tmp_path / "do")
    assert json.loads((path / "config.json").read_text())["model_config"]["architecture"] == "decoder-only"
    ckpt = load_checkpoint(path)
    assert type(ckpt.model).__name__ == "DecoderOnlyTransformer"
    for a, b in zip(ckpt.model.state_dict().values(), trainer.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    resumed = trainer_from_checkpoint(ckpt, train_config=ckpt.train_config.replace(max_steps=25))
    resumed.run()
    assert resumed.step == 25
    assert open_model(str(path)).family.name == "decoder-only"


def test_an_old_checkpoint_without_the_field_is_an_encoder_decoder():
    config = json.loads(open("checkpoints/reverse/config.json").read())
    assert "architecture" not in config["model_config"]
    assert open_model("checkpoints/reverse").family.name == "encoder-decoder"


@pytest.mark.slow
def test_a_decoder_only_model_learns_reversal_with_a_causal_trace():
    trainer = _tiny_trainer(700, lr=3e-3, batch_size=64)
    trainer.run()
    metrics = evaluate_model(trainer.model, trainer.task, n=50)
    assert metrics["exact_match"] >= 0.8, metrics
    adapter = adapter_for(trainer.model, trainer.task.src_tokenizer, trainer.task.tgt_tokenizer)
    result = greedy_decode(adapter, "abcde")
    assert result.output_text == "edcba"
    w = result.trace.weights("self")
    assert float((w * result.trace.masked("self")).abs().max()) == 0.0  # no weight on a future position
    torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))


def test_perplexity_scores_every_token_with_the_models_own_next_token_probabilities():
    """Each token after the first is scored by the row of the token before it, the prompt's rows included (they were
    zero rows once, which gave every text the perplexity of a uniform guess: the vocabulary size)."""
    from transformer.decode import perplexity
    adapter = adapter_for(_model(), TOK, TOK, name="tiny decoder-only")
    line = "attention"
    ids = torch.tensor([adapter.tokenize_source(line).ids])
    with torch.no_grad():  # the text is read as the prompt; the explicit-softmax path, not the fast one perplexity runs
        logits = adapter.model.full(ids, ids[:, :0], need_weights=True)[0][0, :-1]
    nll = -float(logits.log_softmax(-1).gather(-1, ids[0, 1:, None]).mean())
    scored = perplexity(adapter, [line])
    assert scored["tokens"] == ids.shape[1] - 1
    assert scored["nll_per_token"] == pytest.approx(nll, abs=1e-5)
    assert abs(scored["perplexity"] - TOK.vocab_size) > 1.0
