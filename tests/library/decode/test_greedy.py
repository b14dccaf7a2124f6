"""Greedy decoding and traces: cache invariance, batching, forced prefixes, teacher forcing, JSON, labels."""
import json

import pytest
import torch

from transformer.adapters import UNEMITTABLE, adapter_for, ban, greedy_batch
from transformer.data import TaskSpec, make_task, pad, source_ids
from transformer.decode import MEAN_HEAD, AttentionTrace, InputError, greedy_decode, head_label, teacher_forced
from transformer.model import Seq2SeqTransformer, default_configs


@pytest.fixture(scope="module")
def setup():
    task = make_task(TaskSpec(name="reverse", n_train=50, n_valid=10, min_len=4, max_len=8))
    cfg, _ = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                             model_overrides=dict(n_encoder_layers=2, n_decoder_layers=2, max_len=128))
    torch.manual_seed(0)
    model = Seq2SeqTransformer(cfg).eval()
    return model, task.src_tokenizer, task.tgt_tokenizer


def recompute_greedy(model, src_ids, n_steps):
    """Reference decoder: rerun the whole prefix at every step (no cache)."""
    tokens = [1]
    rows = []
    for _ in range(n_steps):
        logits, maps = model.forward_with_attention(torch.tensor([src_ids]), torch.tensor([tokens]))
        rows.append(maps)
        tokens.append(int(ban(logits[0, -1], UNEMITTABLE).argmax()))  # <pad> and <s> are never outputs
    return tokens[1:], rows[-1]


def test_cached_decoding_matches_recomputing_the_prefix(setup):
    model, st, tt = setup
    text = "abcdefg"
    result = greedy_decode(adapter_for(model, st, tt), text, max_steps=20, stop_at_end=False)
    with torch.no_grad():
        tokens, last = recompute_greedy(model, source_ids(st.encode(text)), 20)
    assert [s.token_id for s in result.steps] == tokens
    for layer in range(2):
        torch.testing.assert_close(result.trace.decoder_self[layer], last.decoder_self[layer][0], atol=1e-5, rtol=0)
        torch.testing.assert_close(result.trace.cross[layer], last.cross[layer][0], atol=1e-5, rtol=0)
        torch.testing.assert_close(result.trace.encoder_self[layer], last.encoder_self[layer][0], atol=1e-6, rtol=0)


def test_a_sentence_alone_and_inside_a_padded_batch_decode_the_same(setup):
    model, st, tt = setup
    texts = ["abc", "hello", "zyxwvutsrq"]
    batch = greedy_batch(model, pad([source_ids(st.encode(t)) for t in texts]), max_steps=30)
    for text, row in zip(texts, batch, strict=True):
        alone = greedy_batch(model, torch.tensor([source_ids(st.encode(text))]), max_steps=30)[0]
        single = greedy_decode(adapter_for(model, st, tt), text, max_steps=30)
        assert row == alone
        assert [s.token_id for s in single.steps if s.token_id != 2] == row[: len(single.steps)]


def test_trace_labels_are_what_the_model_saw(setup):
    model, st, tt = setup
    result = greedy_decode(adapter_for(model, st, tt), "abca", top_k=3)
    trace = result.trace
    assert trace.source_tokens == ("a", "b", "c", "a", "</s>")
    assert trace.decoder_input_tokens[0] == "<s>"
    # decoder inputs are the generated prefix: input t+1 is the token chosen at step t
    assert list(trace.decoder_input_tokens[1:]) == list(result.output_tokens[:-1])
    t, s = len(trace.decoder_input_tokens), len(trace.source_tokens)
    assert trace.cross.shape == (2, 4, t, s)  # rows: decoder queries, columns: source keys
    assert trace.decoder_self.shape == (2, 4, t, t)
    for step in result.steps:
        assert step.top_k[0][0] == step.token
        assert [p for _, p in step.top_k] == sorted((p for _, p in step.top_k), reverse=True)


def test_trace_json_has_the_documented_shape(setup):
    model, st, tt = setup
    data = json.loads(greedy_decode(adapter_for(model, st, tt), "hello", top_k=2).to_json())
    assert set(data) == {"format_version", "family", "kinds", "step_offset", "head_groups", "source_text", "mode",
                         "finished", "source_tokens", "target_tokens", "output_tokens", "steps", "attention"}
    assert data["family"] == "encoder-decoder" and data["kinds"] == ["encoder_self", "decoder_self", "cross"]
    s, t = len(data["source_tokens"]), len(data["target_tokens"])
    assert len(data["output_tokens"]) == len(data["steps"]) == t
    att = data["attention"]
    enc = att["encoder_self"]
    assert (len(enc), len(enc[0]), len(enc[0][0]), len(enc[0][0][0])) == (2, 4, s, s)
    assert (len(att["decoder_self"][1][3]), len(att["decoder_self"][1][3][0])) == (t, t)
    assert (len(att["cross"][1][3]), len(att["cross"][1][3][0])) == (t, s)
    assert data["steps"][0]["top_k"][0][0] == data["steps"][0]["token"]


def test_forced_prefix_continues_greedily_from_the_forced_token(setup):
    model, st, tt = setup
    free = greedy_decode(adapter_for(model, st, tt), "abcdef", max_steps=12)
    alternative = next(tok for tok, _ in free.steps[1].top_k if tok != free.steps[1].token)
    forced = greedy_decode(adapter_for(model, st, tt), "abcdef", max_steps=12,
                           forced=[free.steps[0].token, alternative])
    assert forced.output_tokens[:2] == (free.steps[0].token, alternative)
    assert forced.steps[1].forced and not forced.steps[2].forced if len(forced.steps) > 2 else True
    assert forced.trace.decoder_input_tokens[2] == alternative  # the decoder saw the forced token
    # continuing greedily: every later step is the argmax given the forced prefix
    with torch.no_grad():
        ids = [1] + [s.token_id for s in forced.steps]
        logits = model(torch.tensor([source_ids(st.encode("abcdef"))]), torch.tensor([ids[:-1]]))
    assert [int(i) for i in logits[0, 2:].argmax(-1)] == [s.token_id for s in forced.steps[2:]]


def test_teacher_forced_trace_shows_the_reference_on_the_decoder_axis(setup):
    model, st, tt = setup
    result = teacher_forced(adapter_for(model, st, tt), "abc", "cba")
    assert result.trace.decoder_input_tokens == ("<s>", "c", "b", "a")
    assert len(result.steps) == 4 and result.mode == "teacher-forced"
    assert result.trace.cross.shape[2:] == (4, 4)


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_empty_input_is_refused_with_a_message(setup, text):
    model, st, tt = setup
    with pytest.raises(InputError, match="empty"):
        greedy_decode(adapter_for(model, st, tt), text)


def test_over_long_and_unknown_input(setup):
    model, st, tt = setup
    with pytest.raises(InputError, match="at most"):
        greedy_decode(adapter_for(model, st, tt), "a" * 500)
    with pytest.raises(InputError, match="characters"):
        greedy_decode(adapter_for(model, st, tt), "a" * 200_000)
    result = greedy_decode(adapter_for(model, st, tt), "ab😀\u202eCd")
    assert "😀" in result.unknown_tokens and "C" in result.unknown_tokens
    assert result.trace.source_tokens[2] == "<unk>"


def test_trace_refuses_mismatched_labels():
    with pytest.raises(ValueError, match="labels"):
        AttentionTrace(("a", "</s>"), ("<s>",), torch.zeros(1, 2, 2, 2), torch.zeros(1, 2, 1, 1),
                       torch.zeros(1, 2, 1, 3))


def test_tidy_frame_has_one_row_per_cell_and_marks_the_causal_mask(setup):
    model, st, tt = setup
    trace = greedy_decode(adapter_for(model, st, tt), "abcd").trace
    s, t = len(trace.source_tokens), len(trace.decoder_input_tokens)
    frame = trace.to_frame()
    assert len(frame) == 2 * 4 * (s * s + t * t + t * s)
    dec = frame[frame.kind == "decoder_self"]
    assert (dec.masked == (dec.key_index > dec.query_index)).all()
    assert (dec[dec.masked].weight == 0).all()
    cross = frame[(frame.kind == "cross") & (frame["layer"] == 1) & (frame["head"] == 2)]
    assert list(cross.query_token.unique()) == list(dict.fromkeys(trace.decoder_input_tokens))
    grid = cross.set_index(["query_index", "key_index"]).weight.unstack().to_numpy()
    assert torch.equal(torch.tensor(grid), trace.cross[1, 2])


def test_pad_and_start_are_never_chosen_in_top_k_or_forceable_and_probs_renormalise(setup):
    model, st, tt = setup
    result = greedy_decode(adapter_for(model, st, tt), "abcdef", top_k=tt.vocab_size, max_steps=8, stop_at_end=False)
    for step in result.steps:
        shown = dict(step.top_k)
        assert "<pad>" not in shown and "<s>" not in shown and step.token not in ("<pad>", "<s>")
        assert sum(shown.values()) == pytest.approx(1.0, abs=1e-5)  # over what the model can emit
        assert len(shown) == tt.vocab_size - 2
    for special in ("<pad>", "<s>"):
        with pytest.raises(InputError, match="cannot be forced"):
            greedy_decode(adapter_for(model, st, tt), "abcdef", forced=[special])


def test_one_head_label_names_heads_short_for_charts_and_spelled_out_for_prose():
    assert [head_label(1), head_label(None), head_label(MEAN_HEAD, 0), head_label(2, 1, sep="")] == \
        ["H2", "mean", "L1 mean", "L2H3"]
    assert [head_label(1, spelled=True), head_label(MEAN_HEAD, spelled=True), head_label(0, 2, spelled=True)] == \
        ["Head 2", "Mean of heads", "Layer 3 Head 1"]
