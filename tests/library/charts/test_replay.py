"""The offline replay page of a decode: one file, its data compact and escaped, refused when too long."""
from __future__ import annotations

import json
import re

import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.chart_traces import ENGLISH, GERMAN, random_trace
from transformer.charts import MAX_REPLAY_STEPS, ReplayTooLargeError, replay_html
from transformer.charts import replay as replay_module
from transformer.cli import main
from transformer.decode import AttentionTrace, DecodeResult, Step

HOSTILE = "</script><script>alert(1)</script> <!-- \u2028 & <b>"
MULTI30K = ROOT / "checkpoints" / "multi30k-en-de"


def decode_result(trace: AttentionTrace, source_text: str = "ich habe gestern") -> DecodeResult:
    """A greedy DecodeResult over `trace`: the output is the decoder inputs shifted by one, each step with a top-3."""
    outputs = [*trace.decoder_input_tokens[1:], "</s>"]
    steps = tuple(Step(tok, i, 0.6, ((tok, 0.6), ("other", 0.3), ("<unk>", 0.1))) for i, tok in enumerate(outputs))
    return DecodeResult(source_text, steps, trace, "greedy", True, " ".join(outputs[:-1]))


def page_data(page: str) -> dict:
    """The JSON block of a replay page, parsed back."""
    block = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', page, re.S)
    assert block is not None
    return json.loads(block.group(1))


def test_the_page_is_one_file_that_asks_no_server_for_anything():
    page = replay_html(decode_result(random_trace(GERMAN, ENGLISH)), "toy-de-en", "Weights of step 1,200 (last)")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page  # the browser itself refuses requests
    markup = re.sub(r"(<script[^>]*>).*?</script>", r"\1", page, flags=re.S)  # the page without its scripts' text
    assert not re.search(r"\b(src|href)=", markup, re.I)  # nothing is loaded from elsewhere
    assert "vegaEmbed" in page  # the chart code is inlined
    data = page_data(page)
    assert (data["model"], data["weights"], data["source"]) == ("toy-de-en", "Weights of step 1,200 (last)",
                                                                 "ich habe gestern")
    assert [k["kind"] for k in data["kinds"]] == ["encoder_self", "decoder_self", "cross"]
    assert [s["token"] for s in data["steps"]] == [*ENGLISH[1:], "</s>"]
    assert [row["token"] for row in data["steps"][0]["topk"]] == [ENGLISH[1], "other", "<unk>"]


def test_text_from_the_user_cannot_close_the_data_block_or_add_markup():
    trace = random_trace(["</script>", "<b>", "x\u2028y"], ["<s>", "</script><script>alert(2)</script>"])
    page = replay_html(decode_result(trace, HOSTILE), "<img src=x onerror=alert(3)>", HOSTILE)
    assert "alert(1)</script>" not in page and "<script>alert" not in page and "<img src=x" not in page
    assert len(re.findall(r"<script\b", page)) == 3  # the data block, the chart code, the page's own code
    assert "\u2028" not in page and "\u2029" not in page
    data = page_data(page)
    assert (data["source"], data["weights"], data["model"]) == (HOSTILE, HOSTILE, "<img src=x onerror=alert(3)>")
    assert data["kinds"][0]["keys"][0] == "</script>"  # the tokens arrive whole, as text


def test_weights_are_stored_once_in_thousandths_and_decoder_rows_only_up_to_the_diagonal():
    trace = random_trace(GERMAN, ENGLISH, layers=2, heads=3)
    data = page_data(replay_html(decode_result(trace), "m"))
    kinds = {k["kind"]: k for k in data["kinds"]}
    cross = kinds["cross"]
    assert cross["weights"][1][2] == (trace.cross[1, 2] * 1000).round().int().flatten().tolist()
    t = len(ENGLISH)
    assert len(kinds["decoder_self"]["weights"][0][0]) == t * (t + 1) // 2  # the masked half is not stored
    assert all(isinstance(w, int) for w in cross["weights"][0][0])


def test_the_kinds_offered_are_the_ones_the_trace_has():
    full = random_trace(GERMAN, ENGLISH)
    no_encoder = AttentionTrace(full.source_tokens, full.decoder_input_tokens, full.encoder_self[:0],
                                full.decoder_self, full.cross)
    data = page_data(replay_html(decode_result(no_encoder), "m"))
    assert [k["kind"] for k in data["kinds"]] == ["decoder_self", "cross"]


def test_a_decode_too_long_for_one_file_is_refused_naming_the_limit(monkeypatch):
    trace = random_trace(["a", "b"], ["<s>", *["x"] * MAX_REPLAY_STEPS], layers=1, heads=1)
    with pytest.raises(ReplayTooLargeError, match=f"at most {MAX_REPLAY_STEPS} steps"):
        replay_html(decode_result(trace), "m")
    monkeypatch.setattr(replay_module, "MAX_REPLAY_BYTES", 500_000)
    with pytest.raises(ReplayTooLargeError, match="at most 0.5 MB"):
        replay_html(decode_result(random_trace(GERMAN, ENGLISH)), "m")
    assert issubclass(ReplayTooLargeError, ValueError)


def test_cli_writes_the_replay_and_says_in_one_line_why_it_cannot(tiny_checkpoint_dir, tmp_path, capsys):
    out = tmp_path / "replay.html"
    assert main(["decode", str(tiny_checkpoint_dir / "reverse"), "abcdef", "--html", str(out)]) == 0
    data = page_data(out.read_text(encoding="utf-8"))
    assert data["source"] == "abcdef" and data["model"] == "reverse" and data["weights"].startswith("Weights of step")
    capsys.readouterr()
    assert main(["decode", str(tiny_checkpoint_dir / "reverse"), "abcdef", "--html",
                 str(tmp_path / "missing" / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: cannot write") and "\n" not in err


def test_cli_refuses_a_replay_over_the_step_limit(tiny_checkpoint_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(replay_module, "MAX_REPLAY_STEPS", 2)
    assert main(["decode", str(tiny_checkpoint_dir / "reverse"), "abcdef", "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert "at most 2 steps" in err and err.count("\n") == 0 and not (tmp_path / "r.html").exists()


@pytest.mark.slow
@pytest.mark.skipif(not MULTI30K.is_dir(), reason="the shipped Multi30k checkpoint is not here")
def test_a_20_token_multi30k_replay_fits_in_2_mb():
    from transformer.decode import greedy_decode
    from transformer.store import open_model

    adapter = open_model(str(MULTI30K))
    result = greedy_decode(adapter, "A man in a blue shirt and a woman in a red dress are riding their bikes down a "
                               "busy street next to a large old building.", max_steps=20)
    assert len(result.steps) == 20
    page = replay_html(result, adapter.name, "Weights of step 6,684 (last)")
    assert len(page.encode("utf-8")) <= 2_000_000
    assert torch.equal(torch.tensor(page_data(page)["kinds"][2]["weights"][0][0][:3]),
                       (result.trace.cross[0, 0].flatten()[:3] * 1000).round().int())
