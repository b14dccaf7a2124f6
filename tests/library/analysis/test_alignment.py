"""Alignment scores against gold alignments."""
import json
import re

import pytest
import torch

from transformer.analysis import alignment_scores, evaluate_alignment, gold_cells, summarize
from transformer.cli import main
from transformer.data import TaskSpec, gold_sources, make_task
from transformer.decode import MEAN_HEAD, AttentionTrace
from transformer.model import Seq2SeqTransformer, default_configs


def trace_with_cross(cross: torch.Tensor) -> AttentionTrace:
    layers, heads, t, s = cross.shape
    return AttentionTrace(tuple("abcdefgh"[:s - 1]) + ("</s>",), ("<s>",) + tuple("xyzuvw"[: t - 1]),
                          torch.zeros(layers, heads, s, s), torch.zeros(layers, heads, t, t), cross)


def test_a_head_that_reads_the_source_right_to_left_scores_one_on_reversal():
    # reversal of "abc": target j comes from source 2 - j; head 1 of layer 2 attends exactly there
    cross = torch.full((2, 2, 4, 4), 0.25)
    anti = torch.zeros(4, 4)
    for j, g in enumerate([2, 1, 0, 3]):
        anti[j, g] = 1.0
    cross[1, 1] = anti
    frame = alignment_scores(trace_with_cross(cross), [2, 1, 0])
    by_label = dict(zip(frame["label"], frame["score"], strict=True))
    assert by_label["L2H2"] == 1.0
    assert by_label["L1H1"] < 1.0  # a uniform row's argmax is the first source token: 1 hit of 3
    assert summarize(frame) == {"best": 1.0, "best_head": "L2H2", "head_mean": 1.0, "head_mean_layer": 2}
    # the charts' convention: integer heads, -1 for the mean of heads, with a readable label beside
    assert frame["head"].dtype.kind == "i"
    assert frame[frame["layer"] == 1][["head", "label"]].values.tolist() == [[0, "L2H1"], [1, "L2H2"],
                                                                             [MEAN_HEAD, "L2mean"]]
    assert gold_cells([2, None, 0]) == [(0, 2), (2, 0)]


def test_for_sort_a_head_on_either_copy_of_a_repeated_character_hits_and_one_on_another_character_misses():
    # sort "baba" -> "aabb": either "a" (source 1 or 3) is gold for both output a's, either "b" for both b's
    gold = gold_sources("sort", "baba")
    cross = torch.zeros(1, 3, 5, 5)  # (layer, head, target + </s>, source + </s>)
    for j, col in enumerate([3, 1, 2, 0]):  # head 1: the other copy of each repeated letter
        cross[0, 0, j, col] = 1.0
    for j, col in enumerate([1, 3, 0, 2]):  # head 2: the stable copy
        cross[0, 1, j, col] = 1.0
    for j, col in enumerate([0, 1, 2, 1]):  # head 3: "b" for the first output "a", "a" for the last "b"
        cross[0, 2, j, col] = 1.0
    frame = alignment_scores(trace_with_cross(cross), gold)
    by_label = dict(zip(frame["label"], frame["score"], strict=True))
    assert (by_label["L1H1"], by_label["L1H2"], by_label["L1H3"]) == (1.0, 1.0, 0.5)
    # every copy is outlined on the heatmap; a single character keeps its one cell
    assert gold_cells(gold) == [(0, 1), (0, 3), (1, 1), (1, 3), (2, 0), (2, 2), (3, 0), (3, 2)]
    assert gold_cells(gold_sources("sort", "cab")) == [(0, 1), (1, 2), (2, 0)]


def test_reversal_still_needs_the_exact_copy_of_a_repeated_character():
    # reverse "aba" -> "aba": output 0 comes from source 2, not from the "a" at source 0
    cross = torch.zeros(1, 1, 4, 4)
    for j, col in enumerate([0, 1, 2]):
        cross[0, 0, j, col] = 1.0
    frame = alignment_scores(trace_with_cross(cross), gold_sources("reverse", "aba"))
    assert frame.loc[frame["head"] == 0, "score"].item() == 1 / 3


def test_unaligned_target_tokens_are_not_counted():
    cross = torch.zeros(1, 1, 3, 3)
    cross[0, 0, 0, 1] = 1.0
    cross[0, 0, 1, 0] = 1.0
    frame = alignment_scores(trace_with_cross(cross), [1, None])
    assert frame.loc[frame["head"] == 0, "score"].item() == 1.0


def test_evaluate_alignment_covers_every_layer_and_head():
    task = make_task(TaskSpec(name="reverse", n_train=20, n_valid=8))
    cfg, _ = default_configs("reverse", 30, 30, model_overrides=dict(n_decoder_layers=2))
    frame, summary = evaluate_alignment(Seq2SeqTransformer(cfg), task.valid, task.src_tokenizer, task.tgt_tokenizer)
    assert len(frame) == 2 * (4 + 1)
    assert 0.0 <= summary["best"] <= 1.0 and summary["best_head"].startswith("L")


@pytest.mark.parametrize("task", ["reverse", "copy", "sort", "toy-en-de"])
def test_cli_eval_reports_the_alignment_block_for_tasks_with_gold_alignments(task, tmp_path, capsys):
    out = tmp_path / task
    args = ["train", "--task", task, "--out", str(out), "--steps", "3", "--d-model", "16", "--heads", "2",
            "--d-ff", "32", "--n-train", "200", "--n-valid", "20"]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["eval", str(out), "--n", "20"]) == 0
    report = json.loads(capsys.readouterr().out)
    block = report["alignment"]
    assert set(block) >= {"best", "best_head", "head_mean"}
    assert 0.0 <= block["best"] <= 1.0 and 0.0 <= block["head_mean"] <= 1.0
    assert re.fullmatch(r"L\d+H\d+", block["best_head"])


def test_cli_eval_has_no_alignment_block_without_gold_alignments(tmp_path, capsys):
    out = tmp_path / "pairs"
    text = tmp_path / "pairs.tsv"
    text.write_text("ich mochte ein bier\ti want a beer\nich mochte ein cola\ti want a coke\n")
    assert main(["train", "--task", "corpus", "--text-file", str(text), "--out", str(out), "--steps", "3",
                 "--d-model", "16", "--heads", "2", "--d-ff", "32"]) == 0
    capsys.readouterr()
    assert main(["eval", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "alignment" not in report and {"bleu", "chrf"} <= set(report)
