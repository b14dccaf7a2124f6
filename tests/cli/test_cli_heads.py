"""`python -m transformer heads` and `decode --ablate` on the shipped reverse model: figures and user errors."""
from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT
from transformer.analysis import agreement_frame, agreement_frames, attribute_steps, bf16_bound, output_ids
from transformer.cli import main
from transformer.decode import greedy_decode
from transformer.store import open_model

REVERSE = str(ROOT / "checkpoints" / "reverse")


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_heads_json_ranks_every_head_and_reports_agreement(capsys):
    code, out, _ = run(capsys, "heads", REVERSE, "attention", "--json", "--ig-steps", "16")
    assert code == 0
    report = json.loads(out)
    assert report["output"] == "noitnetta" and report["inputs"] == 1
    labels = [h["label"] for h in report["heads"]]
    assert sorted(labels) == sorted(f"{k}:L1H{h}" for k in ("enc", "dec", "cross") for h in range(1, 5))
    drops = [h["drop"] for h in report["heads"]]
    assert drops == sorted(drops, reverse=True) and report["most_important"] == labels[0]
    agreement = report["agreement"]
    assert [h["label"] for h in agreement["heads"]] == [f"cross:L1H{h}" for h in range(1, 5)]
    assert all(-1 <= h["spearman"] <= 1 and 0 <= h["top1"] <= 1 for h in agreement["heads"])
    assert agreement["best"]["best_head"] in {h["label"] for h in agreement["heads"]}


def test_heads_json_reports_decoder_self_attention_agreement_as_the_library_computes_it(capsys):
    code, out, _ = run(capsys, "heads", REVERSE, "attention", "--json", "--ig-steps", "16")
    assert code == 0
    block = json.loads(out)["agreement"]["decoder_self"]
    adapter = open_model(REVERSE)
    result = greedy_decode(adapter, "attention")
    expected = agreement_frame(result.trace.decoder_self,
                               attribute_steps(adapter, "attention", output_ids(result), n_steps=16),
                               kind="decoder_self")
    expected = expected[expected["head"] >= 0]
    assert [h["label"] for h in block["heads"]] == [f"dec:{label}" for label in expected["label"]] == \
        [f"dec:L1H{h}" for h in range(1, 5)]
    assert [h["spearman"] for h in block["heads"]] == pytest.approx(expected["spearman"].tolist(), abs=1e-4)
    assert [h["top1"] for h in block["heads"]] == pytest.approx(expected["top1"].tolist(), abs=1e-4)
    best = expected.set_index("label")["spearman"]  # the named best head is one within float noise of the top
    chosen = block["best"]["best_head"].removeprefix("dec:")
    assert chosen in best.index and best[chosen] >= best.max() - 1e-4


def test_heads_averages_validation_inputs_and_names_the_best_aligned_head(capsys):
    code, out, _ = run(capsys, "heads", REVERSE, "--valid", "3", "--json", "--no-agreement")
    assert code == 0
    report = json.loads(out)
    assert report["inputs"] == 3 and "agreement" not in report
    assert report["alignment"]["best_head"].startswith("cross:L1H")


def test_decode_with_every_cross_head_ablated_no_longer_reverses(capsys):
    code, plain, _ = run(capsys, "decode", REVERSE, "attention")
    code_all, ablated, _ = run(capsys, "decode", REVERSE, "attention", "--ablate",
                               "cross:L1H1,cross:L1H2,cross:L1H3", "--ablate", "cross:L1H4")
    assert code == code_all == 0
    assert plain.strip() == "noitnetta" and ablated.strip() != plain.strip()  # no cross-attention: no reversal


@pytest.mark.parametrize("args, message", [
    (["decode", REVERSE, "abc", "--ablate", "cross:L2H1"], "1 cross layer(s)"),
    (["decode", REVERSE, "abc", "--ablate", "cross:L1H9"], "4 head(s)"),
    (["decode", REVERSE, "abc", "--ablate", "L1H1"], "cannot read head"),
    (["heads", REVERSE], "exactly one of TEXT"),
    (["heads", REVERSE, "   "], "empty"),
    (["heads", REVERSE, "abc", "--file", "x.txt"], "exactly one of TEXT"),
])
def test_bad_heads_and_inputs_are_one_error_line(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_heads_bf16_and_estimate(capsys):
    code, out, _ = run(capsys, "heads", REVERSE, "attention", "--json", "--no-agreement", "--bf16", "--estimate")
    assert code == 0
    report = json.loads(out)
    estimate = report["estimate"]
    assert len(estimate["heads"]) == len(report["heads"]) == 12
    assert -1 <= estimate["spearman_vs_exact"] <= 1
    _, plain, _ = run(capsys, "heads", REVERSE, "attention", "--json", "--no-agreement")
    exact = {h["label"]: h["drop"] for h in json.loads(plain)["heads"]}
    n_tokens = len(report["output"]) + 1  # the letters and </s>
    assert all(abs(h["drop"] - exact[h["label"]]) <= bf16_bound(exact[h["label"]], n_tokens) for h in report["heads"])


def test_heads_compares_attention_with_gradient_x_input_when_asked(capsys):
    code, out, _ = run(capsys, "heads", REVERSE, "attention", "--json", "--attribution", "gradient_x_input")
    agreement = json.loads(out)["agreement"]
    assert code == 0 and agreement["method"] == "gradient_x_input" and "baseline" not in agreement
    adapter = open_model(str(REVERSE))
    result = greedy_decode(adapter, "attention", top_k=1)
    attributions = attribute_steps(adapter, "attention", output_ids(result), method="gradient_x_input")
    frame = agreement_frames(result.trace, attributions)
    cross = frame[(frame["kind"] == "cross") & (frame["head"] >= 0)].sort_values("head")
    assert [h["spearman"] for h in agreement["heads"]] == pytest.approx(cross["spearman"].round(4).tolist(), abs=1e-4)
