"""Hugging Face causal language models (GPT-2, Llama with grouped-query attention, Qwen2) behind the interface:
greedy tokens and every attention weight equal `generate`, the generation config honoured, chat formatting,
long prompts, query-head ablation, attribution over the prompt, and one clear line for each bad input."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from tests.helpers import TEST_DATA
from tests.helpers.hf_causal_models import CAUSAL, build
from transformer.adapters import HFCausalLM
from transformer.analysis import (
    alignment_scores,
    attention_difference,
    attribute_step,
    baseline_score,
    detect_heads,
    group_head_label,
    group_mean,
    head_mask,
    head_stats,
    parse_head,
    sweep_heads,
)
from transformer.cli import main
from transformer.decode import (
    TRACE_FORMAT_VERSION,
    InputError,
    TraceFormatError,
    greedy_decode,
    load_trace_json,
    result_from_dict,
    teacher_forced,
)
from transformer.store import open_model

PROMPT = "A man in a blue shirt"
OLD_TRACE = TEST_DATA / "trace_v1_reverse.json"  # written before format versions


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("causal")
    return {family: build(family, root / family) for family in CAUSAL}


@pytest.fixture(scope="module")
def models(folders):
    return {family: open_model(str(folder)) for family, folder in folders.items()}


def _generate(adapter: HFCausalLM, prompt: str, **kwargs):
    ids = torch.tensor([adapter.tokenize_source(prompt).ids])
    with torch.no_grad():
        out = adapter.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                                     output_attentions=True, return_dict_in_generate=True, **kwargs)
    return ids.shape[1], out


@pytest.mark.parametrize("family", CAUSAL)
def test_greedy_tokens_and_every_attention_weight_equal_generate(models, family):
    adapter = models[family]
    result = greedy_decode(adapter, PROMPT, max_steps=7, stop_at_end=True)
    n_prompt, out = _generate(adapter, PROMPT, max_new_tokens=7)
    assert [s.token_id for s in result.steps] == out.sequences[0, n_prompt:].tolist()
    trace = result.trace
    assert trace.kinds == ("self",) and trace.family_name == "decoder-only"
    assert trace.step_offset == n_prompt - 1
    assert trace.decoder_input_tokens[:n_prompt] == trace.source_tokens  # the prompt is the first decoder inputs
    w = trace.weights("self")  # (L, H, P + n - 1, P + n - 1)
    assert w.shape[2] == n_prompt + len(result.steps) - 1
    for layer in range(w.shape[0]):
        torch.testing.assert_close(w[layer, :, :n_prompt, :n_prompt], out.attentions[0][layer][0], atol=1e-5, rtol=0)
        for t in range(1, len(result.steps)):
            row = n_prompt - 1 + t
            torch.testing.assert_close(w[layer, :, row, : row + 1], out.attentions[t][layer][0, :, 0], atol=1e-5,
                                       rtol=0)
    assert bool((w * trace.masked("self")).abs().max() == 0)  # nothing on a future position


@pytest.mark.parametrize("family", CAUSAL)
def test_the_generation_config_decides_length_and_end_tokens(models, family):
    adapter = models[family]
    free = greedy_decode(adapter, PROMPT, max_steps=6)
    end = free.steps[3].token_id
    gen = adapter.generation_config
    saved = (gen.eos_token_id, gen.max_new_tokens)
    try:
        gen.eos_token_id, gen.max_new_tokens = [12345 % adapter.vocab_size, end], 9  # an EOS list
        adapter.end_ids = frozenset(gen.eos_token_id)
        ours = greedy_decode(adapter, PROMPT)
        n_prompt, out = _generate(adapter, PROMPT)
    finally:
        gen.eos_token_id, gen.max_new_tokens = saved
        adapter.end_ids = frozenset(saved[0] if isinstance(saved[0], list) else [saved[0]])
    assert ours.finished and [s.token_id for s in ours.steps] == out.sequences[0, n_prompt:].tolist()
    assert ours.steps[-1].token_id == end and len(ours.steps) <= 4


def test_grouped_query_heads_carry_their_key_value_group(models):
    trace = greedy_decode(models["llama"], PROMPT, max_steps=3).trace
    assert trace.head_groups["self"] == (0, 0, 1, 1)
    assert group_head_label(trace, "self", 2) == "H3 · kv2"
    means = group_mean(trace, "self")
    assert means.shape[1] == 2
    torch.testing.assert_close(means[:, 1], trace.weights("self")[:, 2:4].mean(1))
    assert group_head_label(greedy_decode(models["gpt2"], PROMPT, max_steps=2).trace, "self", 2) == "H3"


def test_chat_formatting_shows_the_templates_tokens(folders):
    chat = open_model(str(folders["qwen2"]), chat=True)
    tokens = greedy_decode(chat, "Hello there", max_steps=2).trace.source_tokens
    assert tokens[0] == "<|im_start|>" and "<|im_end|>" in tokens and tokens.count("<|im_start|>") == 2
    assert tokens[-1] == "Ċ"  # the assistant turn opened, its newline a token of its own
    with pytest.raises(Exception, match="no chat template"):
        open_model(str(folders["gpt2"]), chat=True)


def test_a_long_prompt_decodes_and_one_over_the_cap_is_refused(models):
    adapter = models["gpt2"]
    assert adapter.max_source_len == adapter.context == 1100  # the model's own context, no cap of the studio's below it
    words = "a dog runs on the grass " * 400
    ids = adapter.tokenizer(words).input_ids
    prompt = adapter.tokenizer.decode(ids[:1024])
    result = greedy_decode(adapter, prompt, max_steps=2)
    assert result.trace.step_offset == len(adapter.tokenize_source(prompt).ids) - 1 >= 1000
    with pytest.raises(InputError, match="reads at most 1,100 tokens .its own context"):
        greedy_decode(adapter, words)
    with pytest.raises(InputError, match="empty"):
        greedy_decode(adapter, "  ")


def test_teacher_forcing_puts_prompt_and_reference_on_one_axis(models):
    adapter = models["llama"]
    result = teacher_forced(adapter, PROMPT, "on a bike")
    n_prompt = len(adapter.tokenize_source(PROMPT).ids)
    ref = adapter.target_ids("on a bike")
    assert len(result.trace.decoder_input_tokens) == n_prompt + len(ref)
    assert len(result.steps) == len(ref) + 1 and result.trace.step_offset == n_prompt - 1
    greedy = greedy_decode(adapter, PROMPT, max_steps=1)
    torch.testing.assert_close(result.trace.weights("self")[:, :, :n_prompt, :n_prompt],
                               greedy.trace.weights("self")[:, :, :n_prompt, :n_prompt], atol=1e-5, rtol=0)


def test_switching_query_heads_off_changes_the_output_and_leaves_no_hook(models):
    adapter = models["llama"]
    intact = greedy_decode(adapter, PROMPT, max_steps=4)
    heads = [parse_head(f"self:L{layer}H{h}", adapter) for layer in (1, 2) for h in (1, 2, 3)]
    ablated = greedy_decode(adapter, PROMPT, max_steps=4, head_mask=head_mask(adapter, heads))
    assert not torch.equal(intact.trace.weights("self")[1], ablated.trace.weights("self")[1])
    assert all(not m._forward_pre_hooks for m in adapter.model.modules())
    again = greedy_decode(adapter, PROMPT, max_steps=4)
    assert torch.equal(again.trace.weights("self"), intact.trace.weights("self"))
    sweep = sweep_heads(adapter, PROMPT, [s.token_id for s in intact.steps])
    assert set(sweep.frame["kind"]) == {"self"} and len(sweep.frame) == 2 * 4
    with pytest.raises(Exception, match="no cross attention"):
        parse_head("cross:L1H1", adapter)


def test_integrated_gradients_over_the_prompt_is_complete(models):
    adapter = models["gpt2"]
    out = [s.token_id for s in greedy_decode(adapter, PROMPT, max_steps=3).steps]
    attr = attribute_step(adapter, PROMPT, out, 2, n_steps=64)
    n_prompt = len(adapter.tokenize_source(PROMPT).ids)
    assert attr.source.shape == (n_prompt,) and attr.target.shape == (2,)
    total = float(attr.source.sum() + attr.target.sum())
    assert total == pytest.approx(attr.score - baseline_score(adapter, PROMPT, out, 2), abs=0.02)


def test_head_views_work_on_the_one_causal_kind(models):
    trace = greedy_decode(models["qwen2"], PROMPT, max_steps=3).trace
    stats = head_stats(trace, "self")
    assert len(stats) == 2 * 5
    with pytest.raises(ValueError, match="no cross-attention"):
        alignment_scores(trace, [0, 1])
    other = greedy_decode(models["qwen2"], PROMPT, max_steps=3, head_mask={"self": torch.tensor([[0., 1, 1, 1],
                                                                                                 [1, 1, 1, 1]])})
    diff = attention_difference(trace, other.trace, "self", 1, None)
    assert diff.a.shape == diff.b.shape and diff.max_abs > 0
    detected = detect_heads(models["qwen2"])
    assert detected.kind == "self" and {"previous_token", "induction"} <= set(detected.frame.columns)


def test_trace_json_names_the_family_and_reads_back(models, tmp_path):
    result = greedy_decode(models["gpt2"], PROMPT, max_steps=3)
    data = json.loads(result.to_json())
    assert data["family"] == "decoder-only" and data["kinds"] == ["self"] and "cross" not in data["attention"]
    back = result_from_dict(data)
    assert back.trace.kinds == ("self",) and back.trace.step_offset == result.trace.step_offset
    torch.testing.assert_close(back.trace.weights("self"), result.trace.weights("self"))


def test_a_trace_json_written_before_families_still_loads():
    assert "format_version" not in json.loads(OLD_TRACE.read_text())  # version 1: no version, no family
    old = load_trace_json(OLD_TRACE)
    assert old.trace.family_name == "encoder-decoder" and old.trace.kinds == ("encoder_self", "decoder_self", "cross")
    assert old.trace.cross.shape[2:] == (len(old.trace.decoder_input_tokens), len(old.trace.source_tokens))


def test_a_trace_json_names_its_format_version_and_reads_back_the_same(tmp_path):
    data = load_trace_json(OLD_TRACE).to_dict()
    assert data["format_version"] == TRACE_FORMAT_VERSION == 4
    (tmp_path / "trace.json").write_text(json.dumps(data))
    again = load_trace_json(tmp_path / "trace.json")
    assert again.to_dict() == data
    assert result_from_dict({**data, "format_version": 2}).to_dict() == data  # version 2: no sampling, no beam
    del data["format_version"]  # a version-1 file of the families era (family, kinds, step ids) reads the same
    assert result_from_dict(data).to_dict() == {**data, "format_version": TRACE_FORMAT_VERSION}


def test_a_sampled_trace_reads_back_with_its_settings_and_draws(tiny_checkpoint_dir):
    from transformer.decode import Sampling
    adapter = open_model(str(tiny_checkpoint_dir / "reverse"))
    result = greedy_decode(adapter, "abcdefg", sampling=Sampling(temperature=3.0, top_k=6, top_p=0.95, seed=11))
    data = json.loads(result.to_json())
    assert data["mode"] == "sampled" and data["format_version"] == 4  # version 3 on: a version-2 reader misreads it
    back = result_from_dict(data)
    assert back.sampling == result.sampling and back.samples == result.samples
    assert back.to_dict() == data
    with pytest.raises(TraceFormatError, match="sampling.steps has 1 entries"):
        result_from_dict({**data, "sampling": {**data["sampling"], "steps": data["sampling"]["steps"][:1]}})


def test_hidden_keys_read_back():
    data = load_trace_json(OLD_TRACE).to_dict()
    back = result_from_dict({**data, "hidden_keys": {"source": [0], "target": [0, 1]}}).trace
    assert back.hidden_source == (0,) and back.hidden_target == (0, 1)
    with pytest.raises(TraceFormatError, match="hidden_keys.source names a position outside its 5 tokens"):
        result_from_dict({**data, "hidden_keys": {"source": [5]}})


def test_a_trace_json_from_a_newer_version_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "future.json"
    path.write_text(json.dumps({**json.loads(OLD_TRACE.read_text()), "format_version": TRACE_FORMAT_VERSION + 1,
                                "residuals": "something this version cannot know"}))
    with pytest.raises(TraceFormatError) as refused:
        load_trace_json(path)
    assert str(refused.value) == (f"{path}: trace format version 5 was written by a newer version of Attention "
                                  "Studio; this one reads versions 1 to 4: update it to open this file")
    for bad in ("2", 0, True, None):
        with pytest.raises(TraceFormatError, match="not a trace JSON .format_version .* is not a positive integer"):
            result_from_dict({**json.loads(OLD_TRACE.read_text()), "format_version": bad})


def _spoil_config(change):
    def spoil(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        change(config)
        (folder / "config.json").write_text(json.dumps(config))
    return spoil


def _pickled_only(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"not opened")


def _small_embedding(folder: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel
    GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2, n_positions=64)).save_pretrained(folder)


BAD = {
    "image model vit": (_spoil_config(lambda c: c.update(model_type="vit")), "'vit' is not a text"),
    "bert config over other weights": (_spoil_config(lambda c: c.update(model_type="bert")), "do not match"),
    "remote code": (_spoil_config(lambda c: c.update(auto_map={"AutoModelForCausalLM": "x.Y"})), "custom code"),
    "pickled weights only": (_pickled_only, "safetensors"),
    "tokenizer larger than the embedding": (_small_embedding, "do not belong together"),
}


@pytest.mark.parametrize("case", BAD)
def test_each_bad_folder_is_one_clear_line(case, folders, tmp_path, capsys):
    spoil, message = BAD[case]
    folder = tmp_path / "m"
    shutil.copytree(folders["gpt2"], folder)
    spoil(folder)
    capsys.readouterr()
    code = main(["decode", str(folder), PROMPT])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and message in err, err


@pytest.mark.parametrize("prompt, message", [("", "empty"), ("a dog runs " * 800, "reads at most")])
def test_bad_prompts_are_one_clear_line(folders, capsys, prompt, message):
    code = main(["decode", str(folders["gpt2"]), prompt])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_forced_tokens_come_first_and_top_k_lists_what_can_be_emitted(models):
    adapter = models["qwen2"]
    free = greedy_decode(adapter, PROMPT, max_steps=4, top_k=3)
    other = next(tok for tok, _ in free.steps[0].top_k if tok != free.steps[0].token)
    forced = greedy_decode(adapter, PROMPT, max_steps=4, forced=[other])
    assert forced.steps[0].token == other and forced.steps[0].forced and not forced.steps[1].forced
    row = forced.trace.step_offset + 1
    assert forced.trace.decoder_input_tokens[row] == other  # the model read the forced token next
    assert all(len(s.top_k) == 3 and s.top_k[0][1] >= s.top_k[-1][1] for s in free.steps)
