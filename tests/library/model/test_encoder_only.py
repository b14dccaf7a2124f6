"""Our encoder-only architecture (a masked LM over a pair `A </s> B </s>`): its predictions are the network's own,
capture and padding never change them, the masking rules hold (one sentence, never a separator, the same masks on
every rank), the task reads both sentences with one vocabulary, and the shipped toy model fills held-out toy pairs."""
from __future__ import annotations

import json

import pytest
import torch

from tests.helpers import ROOT
from transformer.cli import main
from transformer.data import (
    END_ID,
    MASK_ID,
    BucketSampler,
    ShardedBucketSampler,
    TaskSpec,
    make_task,
    masked_lm_task,
)
from transformer.data.masking import (
    MASK_SHARE,
    MaskedBatches,
    encode_pairs,
    evaluation_examples,
    example_rng,
    mask_pair,
)
from transformer.decode import fill_masks
from transformer.model import ENCODER_ONLY, ConfigError, ModelConfig, build_model
from transformer.store import load_checkpoint, open_model, task_for_checkpoint
from transformer.train import evaluate_model

SHIPPED = ROOT / "checkpoints" / "toy-en-de-encoder-only"
PAIR = ("the old man sees a small dog", "der alte mann sieht einen kleinen <mask>")


@pytest.fixture(scope="module")
def adapter():
    return open_model(str(SHIPPED))


def test_the_shipped_model_opens_as_our_encoder_only_family(adapter):
    assert adapter.family is ENCODER_ONLY and adapter.source == "checkpoint"
    assert set(adapter.head_counts()) == {"encoder_self"}
    source = adapter.tokenize_pair(*PAIR)
    assert source.tokens[-8:] == ("der", "alte", "mann", "sieht", "einen", "kleinen", "<mask>", "</s>")
    assert adapter.segments(source.ids) == tuple([0] * 8 + [1] * 8)  # A and its </s>, then B and its </s>
    assert adapter.tokenize_source(" </s> ".join(PAIR)).ids == source.ids  # a pair typed in one box


def test_predictions_at_the_masks_are_the_networks_own(adapter):
    result = fill_masks(adapter, *PAIR, top_k=5)
    src = torch.tensor([result.source.ids])
    with torch.no_grad():
        probs = adapter.network(src)[0].softmax(-1)  # the plain forward: no capture, no adapter
    (p,) = result.predictions
    values, ids = probs[p.position].topk(5)
    assert [i for _, i, _ in p.top_k] == ids.tolist()
    assert [v for _, _, v in p.top_k] == pytest.approx(values.tolist(), abs=1e-6)
    assert p.token == "hund"  # the English sentence holds the answer
    by_click = fill_masks(adapter, PAIR[0], PAIR[1].replace("<mask>", "hund"), mask_positions=[p.position], top_k=5)
    assert by_click.source.ids == result.source.ids and by_click.predictions[0].top_k == p.top_k
    assert by_click.predictions[0].original == "hund"


def test_capture_and_padding_never_change_the_logits():
    torch.manual_seed(0)
    model = build_model(ModelConfig(40, 40, d_model=32, n_heads=4, n_encoder_layers=2, d_ff=64, dropout=0.0,
                                    architecture="encoder-only")).eval()
    long, short = [5, 6, 7, 2, 8, 9, 10, 11, 2], [5, MASK_ID, 7, 2, 9, 2]
    with torch.no_grad():
        alone = model(torch.tensor([short]))
        padded = model(torch.tensor([long, short + [0] * 3]))
        captured = model.forward_with_attention(torch.tensor([short]))
    assert torch.equal(captured.logits, alone)
    torch.testing.assert_close(padded[1, :6], alone[0], atol=1e-5, rtol=0)
    weights = captured.attentions.encoder_self[0]  # (1, H, S, S): bidirectional, every row sums to 1
    assert bool((weights[0, :, 0, -1] > 0).all())
    with pytest.raises(ConfigError, match="one joint vocabulary"):
        ModelConfig(40, 50, architecture="encoder-only")


def test_one_sentence_is_masked_never_a_separator_and_eval_masks_are_all_the_mask():
    ids = [*range(4, 24), END_ID, *range(30, 50), END_ID]  # 20 + 20 tokens
    for i in range(50):
        example = mask_pair(ids, example_rng(0, 0, i), 60, bert=True)
        masked = [p for p, label in enumerate(example.labels) if label]
        assert len(masked) == round(MASK_SHARE * 20) and all(ids[p] == example.labels[p] for p in masked)
        assert all(p < 20 for p in masked) or all(p > 20 for p in masked)  # one sentence
        assert example.ids[20] == example.ids[-1] == END_ID
        changed = {i for i, (a, b) in enumerate(zip(ids, example.ids, strict=True)) if a != b}
        assert changed <= set(masked)  # nothing else changed
        plain = mask_pair(ids, example_rng(0, 0, i), 60, bert=False)
        assert [plain.ids[p] for p in masked] == [MASK_ID] * len(masked)  # the same choice, every token <mask>


def test_a_rank_masks_its_share_of_a_global_batch_as_one_process_does():
    task = masked_lm_task(make_task(TaskSpec(name="reverse", n_train=64, n_valid=5)))
    pairs = encode_pairs(task, 64)
    empty = [[]] * len(pairs)
    one = iter(MaskedBatches(BucketSampler(pairs, empty, 16, seed=3), pairs, 30, seed=3))
    ranks = [iter(MaskedBatches(ShardedBucketSampler(pairs, empty, 8, rank=r, world=2, seed=3), pairs, 30, seed=3))
             for r in range(2)]
    for _ in range(6):  # past an epoch: the masks are drawn afresh
        whole, parts = _rows(next(one)), [_rows(next(r)) for r in ranks]
        assert sorted(parts[0] + parts[1]) == sorted(whole) and parts[0] and parts[1]


def _rows(batch) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Each example of a batch as (masked ids, labels) without its padding."""
    lengths = (batch.src != 0).sum(1).tolist()
    return [(tuple(s[:n]), tuple(t[:n]))
            for s, t, n in zip(batch.src.tolist(), batch.tgt_out.tolist(), lengths, strict=True)]


def test_the_task_reads_both_sentences_with_one_vocabulary():
    toy = make_task(TaskSpec(name="toy-en-de", n_train=300, n_valid=10))
    joint = masked_lm_task(toy)
    tok = joint.src_tokenizer
    assert joint.tgt_tokenizer is tok and tok.vocab_size > toy.src_tokenizer.vocab_size
    example = toy.train[0]
    assert tok.unk_id not in tok.encode(example.source) + tok.encode(example.target)
    assert tok.token_to_id("the") is not None and tok.token_to_id("der") is not None
    char = make_task(TaskSpec(name="reverse", n_train=20, n_valid=5))
    assert masked_lm_task(char) is char  # one alphabet already
    pairs = "\n".join(f"a man {i}\tein mann {i}" for i in range(40))
    corpus = make_task(TaskSpec(name="corpus", text=pairs, tokenizer="bpe", vocab_size=300, joint=False))
    with pytest.raises(ConfigError, match="one vocabulary for both sentences"):
        masked_lm_task(corpus)


@pytest.mark.slow  # a full evaluation, as the other shipped checkpoints' figures
def test_the_shipped_model_fills_held_out_toy_pairs():
    ckpt = load_checkpoint(SHIPPED, load_optimizer=False)
    task = task_for_checkpoint(ckpt)
    held_out = {e.source for e in task.valid[:500]}
    assert not held_out & {e.source for e in task.train}
    metrics = evaluate_model(ckpt.model, task, 500)
    assert metrics["n"] == 500 and metrics["token_accuracy"] >= 0.9  # the bar for the shipped model
    assert metrics["alignment"]["best"] > 0.5  # a head reads the masked word's counterpart in the other sentence
    masked = evaluation_examples(task, 500, ckpt.model_config.max_len)
    assert sum(label != 0 for e in masked for label in e.labels) >= 500


def test_fill_cli_and_train_cli_on_our_encoder_only_model(capsys, tmp_path):
    assert main(["fill", str(SHIPPED), PAIR[0], "--pair", PAIR[1], "--top-k", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["family"] == "encoder-only" and data["predictions"][0]["top_k"][0]["token"] == "hund"
    assert data["segments"] == [0] * 8 + [1] * 8
    assert main(["decode", str(SHIPPED), PAIR[0]]) == 2
    assert "(fill)" in capsys.readouterr().err
    assert main(["fill", str(SHIPPED), PAIR[0]]) == 2
    assert "<mask>" in capsys.readouterr().err
    assert main(["train", "--task", "reverse", "--architecture", "encoder-only", "--stage",
                 "--out", str(tmp_path / "x")]) == 2
    assert "encoder-only" in capsys.readouterr().err


@pytest.mark.slow
def test_a_training_job_trains_it_live_with_its_probe(tmp_path):
    """The Train page's machinery (a training process, its probe and evaluations) trains the encoder-only model: the
    probe's frames are predictions at the masks of the probe pair, and the masked-token accuracy rises."""
    from transformer.model import default_configs
    from transformer.train import JobPlan, Trainer, TrainingJob

    torch.manual_seed(0)
    task = masked_lm_task(make_task(TaskSpec(name="copy", n_train=2000, n_valid=100, min_len=4, max_len=8)))
    model_cfg, train_cfg = default_configs("copy", 30, 30, model_overrides=dict(
        architecture="encoder-only", d_model=32, d_ff=64, n_heads=2, n_encoder_layers=1), train_overrides=dict(
        max_steps=200, max_seconds=None, eval_every=200, eval_examples=100, batch_size=32, warmup_steps=20))
    trainer = Trainer(task, model_cfg, train_cfg)
    before = trainer.evaluate(100)["token_accuracy"]
    job = TrainingJob(JobPlan(task=task, model_cfg=model_cfg, train_cfg=train_cfg, max_steps=200, probe="abcdef",
                              probe_every=100, publish_every_s=0.0)).start()
    assert job.join(timeout=240)
    snap = job.snapshot()
    assert snap.status == "finished" and snap.step == 200
    after = snap.evals[-1]["token_accuracy"]
    assert after > max(2 * before, 2 / 26), (before, after)  # well above the untrained model and chance
    frames = job.timeline()
    assert [s for s, _ in frames] == [0, 100, 200]
    trace = frames[-1][1]
    assert trace.family_name == "encoder-only" and trace.kinds == ("encoder_self",)
    # the probe as the pair it trains on (the text, its copy), every third token of the copy masked
    assert trace.source_tokens == ("a", "b", "c", "d", "e", "f", "</s>", "<mask>", "b", "c", "<mask>", "e", "f", "</s>")


def _hits(weights: torch.Tensor, rows: list[int], keys: range, gold: list[tuple[int, ...]]) -> torch.Tensor:
    """By hand: per (layer, head) of (L, H, S, S) weights, how many of `rows` put their highest weight among `keys`
    on one of their gold keys."""
    picked = weights[:, :, rows][..., list(keys)].argmax(-1) + keys.start  # (L, H, R)
    return sum(torch.stack([picked[..., r] == k for k in g]).any(0).double() for r, g in enumerate(gold))


def test_what_the_heads_attend_to_across_the_pair_is_read_from_the_models_own_maps(adapter):
    """The `alignment` that eval reports for the one-stack architectures equals the hits counted by hand on each
    example's own forward: a masked token's best key in the other sentence (encoder-only), the row that predicts a
    target token's best source key (decoder-only)."""
    from transformer.analysis.heads.alignment import accepted
    from transformer.analysis.heads.pair_alignment import masked_pair_alignment, prefix_alignment

    ckpt = load_checkpoint(SHIPPED, load_optimizer=False)
    task = task_for_checkpoint(ckpt)
    examples = evaluation_examples(task, 12, ckpt.model_config.max_len)
    golds = [e.alignment for e in task.valid[:12]]
    frame, _ = masked_pair_alignment(ckpt.model, examples, golds)
    total, n = 0, 0
    for example, gold in zip(examples, golds, strict=True):
        with adapter.running():
            out = adapter.forward(torch.tensor([example.ids]))
            weights = torch.stack(out.attentions.encoder_self)[:, 0]  # (L, H, S, S)
        sep = example.ids.index(END_ID)
        masked = [i for i, label in enumerate(example.labels) if label]
        if masked[0] > sep:  # B masked: its source in A
            rows = [i for i in masked if gold[i - sep - 1] is not None]
            want = [accepted(gold[i - sep - 1]) for i in rows]
            keys = range(0, sep)
        else:  # A masked: the B tokens aligned to it
            rows = [i for i in masked if any(i in accepted(g) for g in gold)]
            want = [tuple(sep + 1 + j for j, g in enumerate(gold) if i in accepted(g)) for i in rows]
            keys = range(sep + 1, len(example.ids) - 1)
        if rows:
            total, n = total + _hits(weights, rows, keys, list(want)), n + len(rows)
    heads = frame[frame["head"] >= 0].sort_values(["layer", "head"])["score"].to_numpy()
    assert heads == pytest.approx((total / n).flatten().numpy(), abs=1e-9) and n >= 12

    reverse = open_model(str(ROOT / "checkpoints" / "reverse-decoder-only"))
    rtask = task_for_checkpoint(load_checkpoint(ROOT / "checkpoints" / "reverse-decoder-only", load_optimizer=False))
    chosen = rtask.valid[:6]
    frame, _ = prefix_alignment(reverse.network, chosen, rtask.src_tokenizer, rtask.tgt_tokenizer)
    total, n = 0, 0
    for example in chosen:
        source = reverse.tokenize_source(example.source)
        target = rtask.tgt_tokenizer.encode(example.target)
        full = [*reverse.decoder_prefix(source), *target]
        with reverse.running():
            weights = torch.stack(reverse.forward(torch.tensor([source.ids]), torch.tensor([full])).attentions["self"])
        s = len(source.ids)
        rows = [s + j for j in range(len(target))]  # the row of <s>, then of each target token: predicts target j
        want = [accepted(example.alignment[j]) for j in range(len(target))]
        total, n = total + _hits(weights[:, 0], rows, range(0, s - 1), want), n + len(rows)
    heads = frame[frame["head"] >= 0].sort_values(["layer", "head"])["score"].to_numpy()
    assert heads == pytest.approx((total / n).flatten().numpy(), abs=1e-9)
